//! Malformed kernels, specifications and meshes are rejected with an error that names the
//! kernel, the operation and the problem; never a panic.

use semcheck::model::dsl::{ds, trace, zeros_like};
use semcheck::model::ir::{MemorySpace, SemId, SemRef, StmtKind};
use semcheck::model::{compile, ErrorKind, Expectation, Expected, Mesh, ModelError, Notation, Spec};
use semcheck::protocols::find;

fn no_spec() -> Spec {
    Spec { notation: Notation::Plain, outputs: vec![] }
}

fn compile_ring(kernel: semcheck::model::ir::Kernel, n: usize) -> Result<semcheck::model::Program, ModelError> {
    compile(&kernel, &Mesh::ring(n).unwrap(), &no_spec(), 1)
}

fn expect_error(result: Result<semcheck::model::Program, ModelError>, kind: ErrorKind, words: &[&str]) {
    let err = result.err().unwrap_or_else(|| panic!("expected a {kind:?} error"));
    assert_eq!(err.kind(), &kind, "{err}");
    for w in words {
        assert!(err.to_string().contains(w), "`{err}` should mention `{w}`");
    }
}

#[test]
fn unknown_semaphore() {
    let mut kernel = trace("bad", |k| {
        let sem = k.regular_semaphore("sem");
        k.semaphore_wait(&sem, 1);
    })
    .unwrap();
    // A front end that emits a dangling semaphore id.
    kernel.body.push(StmtKind::Wait { sem: SemRef { sem: SemId(7), index: None }, amount: 1.into() }.into());
    expect_error(compile_ring(kernel, 2), ErrorKind::UnknownSemaphore, &["kernel bad", "semaphore_wait", "#7"]);
}

#[test]
fn wrong_kind_of_semaphore() {
    let kernel = trace("bad", |k| {
        let x = k.input("x", MemorySpace::Hbm, &[]);
        let y = k.output("y", MemorySpace::Hbm, &[]);
        let regular = k.regular_semaphore("not_a_dma_sem");
        k.make_async_copy(&x, &y, &regular).start();
    })
    .unwrap();
    expect_error(
        compile_ring(kernel, 2),
        ErrorKind::WrongSemaphoreKind,
        &["make_async_copy", "not_a_dma_sem", "REGULAR"],
    );

    let kernel = trace("bad", |k| {
        let dma = k.dma_semaphore("dma_sem");
        k.semaphore_signal(&dma, 1, None);
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::WrongSemaphoreKind, &["semaphore_signal", "dma_sem"]);
}

#[test]
fn slice_out_of_range() {
    let kernel = trace("bad", |k| {
        let x = k.input("x", MemorySpace::Vmem, &[2]);
        let y = k.output("y", MemorySpace::Vmem, &[2]);
        y.at(ds(1, 2)).assign(&x);
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::OutOfRange, &["kernel bad", "ds(1, 2)", "`y`"]);

    // The second index of `.at[0, 5]` is named as the second dimension.
    let kernel = trace("bad", |k| {
        let x = k.input("x", MemorySpace::Vmem, &[2, 2]);
        let y = k.output("y", MemorySpace::Vmem, &[]);
        y.assign(x.at((0i64, 5i64)));
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::OutOfRange, &["index 5 out of range for dimension 1 of `x`"]);

    // An index that is only out of range on some devices: slot = axis_index + 1.
    let kernel = trace("bad", |k| {
        let buf = k.output("buf", MemorySpace::Hbm, &[2]);
        let sem = k.dma_semaphore("sem");
        let x = k.input("x", MemorySpace::Hbm, &[]);
        k.make_async_copy(&x, &buf.at(k.axis_index("x") + 1), &sem).start();
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::OutOfRange, &["on d1", "index 2"]);

    let kernel = trace("bad", |k| {
        let sems = k.dma_semaphores("recv_sems", 2);
        let x = k.input("x", MemorySpace::Hbm, &[]);
        let y = k.output("y", MemorySpace::Hbm, &[]);
        k.make_async_copy(&x, &y, &sems.at(5)).start();
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::OutOfRange, &["recv_sems", "index 5"]);
}

#[test]
fn size_mismatch() {
    let kernel = trace("bad", |k| {
        let x = k.input("x", MemorySpace::Hbm, &[2]);
        let y = k.output("y", MemorySpace::Hbm, &[]);
        let send = k.dma_semaphore("send");
        let recv = k.dma_semaphore("recv");
        k.make_async_remote_copy(&x, &y, &send, &recv, (k.axis_index("x") + 1) % 2).start();
    })
    .unwrap();
    expect_error(
        compile_ring(kernel, 2),
        ErrorKind::SizeMismatch,
        &["make_async_remote_copy", "2 cell(s)", "1 cell(s)"],
    );
}

#[test]
fn device_id_off_the_mesh() {
    let kernel = trace("bad", |k| {
        let sem = k.regular_semaphore("sem");
        k.semaphore_signal(&sem, 1, k.axis_index("x") + 1); // no `% num_devices`
    })
    .unwrap();
    expect_error(compile_ring(kernel, 3), ErrorKind::DeviceOffMesh, &["semaphore_signal", "on d2", "[3]"]);

    let kernel = trace("bad", |k| {
        let sem = k.regular_semaphore("sem");
        k.semaphore_signal(&sem, 1, k.device(&[("tc", 1.into())]));
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::DeviceOffMesh, &["axis `tc`"]);
}

#[test]
fn barrier_semaphore_needs_a_collective_id() {
    let kernel = trace("bad", |k| {
        let b = k.get_barrier_semaphore();
        k.semaphore_wait(&b, 1);
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::JaxRefuses, &["kernel bad", "collective_id"]);
}

#[test]
fn loads_and_stores_of_hbm_are_refused_as_jax_refuses_them() {
    // Mosaic lowers loads and stores of VMEM and SMEM refs only; HBM is reached by DMAs.
    let store = trace("bad", |k| {
        let o = k.output("o", MemorySpace::Hbm, &[2]);
        o.assign(zeros_like(&o));
    })
    .unwrap();
    expect_error(
        compile_ring(store, 2),
        ErrorKind::JaxRefuses,
        &["kernel bad", "Loads and stores are only allowed on VMEM and SMEM references.", "`o`"],
    );
    let load = trace("bad", |k| {
        let x = k.input("x", MemorySpace::Hbm, &[2]);
        let o = k.output("o", MemorySpace::Vmem, &[2]);
        o.assign(&x);
    })
    .unwrap();
    expect_error(
        compile_ring(load, 2),
        ErrorKind::JaxRefuses,
        &["Loads are only allowed on VMEM and SMEM references.", "`x`"],
    );
}

#[test]
fn bad_expressions_and_declarations() {
    let kernel = trace("bad", |k| {
        let sem = k.regular_semaphore("sem");
        k.when(k.axis_index("y").equals(0), |k| k.semaphore_wait(&sem, 1));
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::BadExpression, &["no axis `y`"]);

    let kernel = trace("bad", |k| {
        let sem = k.regular_semaphore("sem");
        k.semaphore_wait(&sem, k.axis_index("x") - 5);
    })
    .unwrap();
    expect_error(compile_ring(kernel, 2), ErrorKind::BadExpression, &["amount -5"]);

    let err = trace("bad", |k| {
        k.scratch("empty", MemorySpace::Vmem, &[0]);
    })
    .unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::BadDeclaration);
    assert!(err.to_string().contains("zero-sized"), "{err}");
}

#[test]
fn handles_from_another_kernel_are_rejected() {
    let err = trace("outer", |outer| {
        let sem = outer.regular_semaphore("outer_sem");
        let inner = trace("inner", |k| k.semaphore_wait(&sem, 1));
        assert!(inner.is_err());
        let err = inner.unwrap_err();
        assert!(err.to_string().contains("another kernel"), "{err}");
    });
    assert!(err.is_ok());
}

#[test]
fn bad_specifications_are_rejected() {
    let kernel = find("ppermute").unwrap().kernel(2, None).unwrap();
    let mesh = Mesh::ring(2).unwrap();
    let spec = |buffer: &str, index: Vec<usize>, device: u16| Spec {
        notation: Notation::Plain,
        outputs: vec![Expectation {
            device: semcheck::model::DeviceId(device),
            buffer: buffer.into(),
            index,
            value: Expected::Sum(vec![]),
        }],
    };
    for (s, words) in [
        (spec("nope", vec![], 0), "no buffer named `nope`"),
        (spec("y_ref", vec![3], 0), "out of range"),
        (spec("y_ref", vec![], 9), "off the mesh"),
    ] {
        let err = compile(&kernel, &mesh, &s, 1).unwrap_err();
        assert!(err.to_string().contains(words), "{err}");
    }
    let err = compile(&kernel, &mesh, &spec("y_ref", vec![], 0), 0).unwrap_err();
    assert!(err.to_string().contains("repeat"), "{err}");
}

#[test]
fn bad_protocol_requests_are_errors() {
    assert_eq!(find("nope").unwrap_err().kind(), &ErrorKind::UnknownName);
    let program = |p: &str, m: Option<&str>, n: usize| semcheck::catalogue_program(p, m, n, 1);
    assert!(program("psum", None, 1).unwrap_err().to_string().contains("at least 2"));
    assert!(program("psum", Some("no-such-mutant"), 2).unwrap_err().to_string().contains("no-capacity"));
    assert!(program("tc_exchange", None, 3).unwrap_err().to_string().contains("2 TensorCores"));
    assert!(Mesh::ring(100_000).is_err());
    // A mesh far too large to explore is rejected when compiled, not after eating memory.
    let err = program("psum", None, 4096).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::TooLarge, "{err}");
}
