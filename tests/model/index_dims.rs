//! An index out of range in one dimension of a multi-dimensional array is an error on the
//! device and line where it happens, never folded row-major into a neighbouring element
//! (a public ragged all-to-all indexes a `(N, 2, 2)` semaphore array as
//! `sems.at[0, (2*idx) % n, 1]`, whose middle index reaches 2 from N = 3).

use proptest::prelude::*;
use semcheck::model::{compile, Mesh, Notation, Spec};

use crate::random_kernel::{kernel, stmt, S};

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// A signal of `grid.at[0, (k * me) % N]` of a 2 x 2 array, before random statements
    /// (other indexed signals left out): the kernel compiles exactly when the column index
    /// is in range on every device, and otherwise the error names the dimension, the
    /// device and the array.
    #[test]
    fn an_index_out_of_range_in_one_dimension_never_compiles(
        times in 1..4i64,
        n in 2..7usize,
        rest in prop::collection::vec(stmt(), 0..3),
    ) {
        let mut body = vec![S::IndexedSignal { k: times, ring: true }];
        body.extend(rest.into_iter().filter(|s| !matches!(s, S::IndexedSignal { .. })));
        let Some(kernel) = kernel(n, false, &body) else { return Ok(()) };
        let spec = Spec { notation: Notation::Plain, outputs: vec![] };
        let first_out = (0..n as i64).find(|me| (times * me) % n as i64 >= 2);
        match (compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1), first_out) {
            (Ok(_), None) => {}
            (Ok(_), Some(me)) => prop_assert!(false, "N = {n}, k = {times}: d{me}'s index is out of range, yet it compiled"),
            (Err(e), Some(me)) => {
                let text = e.to_string();
                prop_assert!(text.contains(&format!("on d{me} ")), "{text}");
                prop_assert!(text.contains("out of range for dimension 1 (size 2)"), "{text}");
                prop_assert!(text.contains("semaphore array `grid`"), "{text}");
            }
            (Err(e), None) => prop_assert!(!e.to_string().contains("out of range for dimension"), "{e}"),
        }
    }
}
