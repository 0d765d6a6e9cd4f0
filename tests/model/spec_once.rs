//! A kernel is compiled once for its check: the lock-step reference is read from the
//! program compiled against an empty specification, then set on it
//! (`semcheck::model::compile::with_spec`). Over the catalogue (every protocol and mutant,
//! every size it runs on up to 4), the program made that way is the one compiling again
//! against the specification makes, field for field.

use semcheck::frontend::spec::{lockstep_program, lockstep_spec};
use semcheck::model::compile::{compile, with_spec};
use semcheck::model::{Notation, Spec};
use semcheck::protocols::{catalogue, MeshKind, Protocol};

/// Every (protocol, mutant, devices, repeat) of the catalogue at the sizes it runs on, up to 4.
fn cases() -> Vec<(&'static Protocol, Option<&'static semcheck::protocols::Mutant>, usize, u32)> {
    let mut out = Vec::new();
    for p in catalogue() {
        let sizes: Vec<usize> = match p.mesh_kind {
            MeshKind::Ring => (2..=4).collect(),
            MeshKind::TensorCores => vec![2],
        };
        let variants = std::iter::once(None).chain(p.mutants.iter().map(Some));
        for m in variants {
            for &n in &sizes {
                out.push((p, m, n, Protocol::default_repeat(m)));
            }
        }
    }
    out
}

#[test]
fn setting_a_spec_on_a_compiled_program_equals_compiling_with_it() {
    let empty = Spec { notation: Notation::Plain, outputs: Vec::new() };
    let mut compared = 0;
    for (p, m, n, repeat) in cases() {
        let (kernel, mesh) = (p.kernel(n, m).unwrap(), p.mesh(n).unwrap());
        let name = format!("{} {:?} N = {n}", p.name, m.map(|m| m.name));
        // The protocol's own specification.
        let spec = p.spec(n);
        let direct = compile(&kernel, &mesh, &spec, repeat).unwrap();
        let set = with_spec(compile(&kernel, &mesh, &empty, repeat).unwrap(), &spec).unwrap();
        assert_eq!(format!("{set:?}"), format!("{direct:?}"), "{name}: the protocol's specification");
        // The lock-step reference, as a kernel file's check reads it.
        let (reference, note) = lockstep_spec(&kernel, &mesh, repeat).unwrap();
        let direct = compile(&kernel, &mesh, &reference, repeat).unwrap();
        let (once, once_note) = lockstep_program(&kernel, &mesh, repeat).unwrap();
        assert_eq!(format!("{once:?}"), format!("{direct:?}"), "{name}: the lock-step reference");
        assert_eq!(once_note, note, "{name}");
        compared += 1;
    }
    assert!(compared > 40, "only {compared} cases compared");
}

#[test]
fn the_unnamed_lockstep_run_takes_the_named_ones_snapshots() {
    use semcheck::checker::counterexample::{lockstep, lockstep_unnamed};
    let (mut runs, mut errors) = (0, 0);
    for (p, m, n, repeat) in cases() {
        let program = p.program(n, m, repeat).unwrap();
        let name = format!("{} {:?} N = {n}", p.name, m.map(|m| m.name));
        match (lockstep(&program), lockstep_unnamed(&program)) {
            (Ok(named), Ok(unnamed)) => {
                assert_eq!(format!("{:?}", unnamed.checkpoints), format!("{:?}", named.checkpoints), "{name}");
                assert_eq!(format!("{:?}", unnamed.values), format!("{:?}", named.values), "{name}");
                assert!(unnamed.events.is_empty() && !named.events.is_empty(), "{name}");
                runs += 1;
            }
            (Err(named), Err(unnamed)) => {
                assert_eq!(unnamed, named, "{name}: the same error, named");
                errors += 1;
            }
            (a, b) => panic!("{name}: lockstep {:?}, unnamed {:?}", a.err(), b.err()),
        }
    }
    assert!(runs > 10 && errors > 0, "{runs} runs and {errors} errors compared");
}
