//! The ring structure read off the compiled catalogue programs: which seed kernels are
//! rotation-symmetric (decided from the programs, `semcheck_model::ring`), and how far
//! their devices communicate.

use semcheck::model::ring::Ring;
use semcheck::protocols::{catalogue, MeshKind};

#[test]
fn ring_collectives_are_rotation_symmetric_neighbour_kernels() {
    for name in ["ppermute", "all_gather", "psum", "psum_scatter"] {
        for n in 2..=6 {
            let p = semcheck::catalogue_program(name, None, n, 1).unwrap();
            let ring = Ring::of(&p).unwrap();
            assert_eq!(ring.size(), n);
            assert_eq!(ring.radius(), 1, "{name} N={n}");
            assert!(!ring.shares_memory(), "{name}");
            let r = ring.rotation().unwrap_or_else(|e| panic!("{name} N={n}: {e}"));
            assert_eq!(r.steps(), 1);
        }
    }
}

#[test]
fn every_catalogue_kernel_is_classified() {
    for p in catalogue() {
        let n = if p.mesh_kind == MeshKind::Ring { 4 } else { 2 };
        for m in std::iter::once(None).chain(p.mutants.iter().map(|m| Some(m.name))) {
            let program = semcheck::catalogue_program(p.name, m, n, 1).unwrap();
            let ring = Ring::of(&program).unwrap();
            let symmetric = ring.rotation().is_ok();
            // Producer and consumer run different programs; every other kernel is SPMD
            // with neighbour-only communication.
            assert_eq!(symmetric, p.name != "producer_consumer", "{} {m:?}: {:?}", p.name, ring.rotation().err());
            if symmetric {
                assert_eq!(ring.radius(), 1, "{} {m:?}", p.name);
            }
        }
    }
    let pc = semcheck::catalogue_program("producer_consumer", None, 2, 1).unwrap();
    let ring = Ring::of(&pc).unwrap();
    assert!(ring.shares_memory());
    let why = ring.rotation().unwrap_err();
    assert!(why.reason.contains("is not the rotation of"), "{why}");
}

#[test]
fn an_asymmetry_names_the_conflicting_cell() {
    use semcheck::model::dsl::trace;
    use semcheck::model::ir::MemorySpace;
    use semcheck::model::{compile, Mesh, Notation, Spec};
    // Every device copies x[0] to o[0]; then device 0 copies x[0] again where every other
    // device copies x[1]: rotating d0 onto d1 would send d0 x[0] to both d1 x[0] and x[1].
    let kernel = trace("skewed", |k| {
        let x = k.input("x", MemorySpace::Vmem, &[2]);
        let o = k.output("o", MemorySpace::Vmem, &[2]);
        o.at(0).assign(x.at(0));
        o.at(1).assign(x.at(k.axis_index("x").equals(0).select(0, 1)));
    })
    .unwrap();
    let spec = Spec { notation: Notation::Plain, outputs: vec![] };
    let program = compile(&kernel, &Mesh::ring(3).unwrap(), &spec, 1).unwrap();
    let ring = Ring::of(&program).unwrap();
    let why = ring.rotation().unwrap_err();
    assert!(
        why.reason.contains(
            "it would send d0 x[0] to d1 x[1], but by the operations before it d0 x[0] already goes to d1 x[0]"
        ),
        "{why}"
    );
}
