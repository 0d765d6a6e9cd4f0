//! `check --sizes` says exactly what was checked (issue 26, item 8): every distinct claim
//! checked on the sizes' compiled programs is listed with the sizes it holds for, and an
//! error at one size keeps the sizes decided before it.

use crate::common::{semcheck, temp_dir};

#[test]
fn each_window_radius_checked_is_listed_with_its_sizes() {
    // guarded_shift invoked twice: radius 1 windows decide N = 2 and 3; from N = 4 radius 1
    // reports a (spurious) violation and radius 2 decides. The report used to keep only
    // the first size's lines, digits removed, so it claimed radius 1 for every size.
    let (code, out, err) =
        semcheck(&["check", "guarded_shift", "--repeat", "2", "--sizes", "2..12", "--exact-max-states", "50"]);
    assert_eq!(code, 0, "{out}{err}");
    let claim = |radius: usize| {
        format!(
            "the windows of radius {radius} around every device are identical up to renaming (rotation symmetry of the windows): one explored per size"
        )
    };
    assert!(out.contains(&format!("{} [N = 2..12]", claim(1))), "{out}");
    assert!(out.contains(&format!("{} [N = 4..12]", claim(2))), "{out}");
    assert!(out.contains(
        "communication radius 1: no device signals or copies to one farther than 1 around the ring [N = 2..12]"
    ));
}

#[test]
fn an_error_at_one_size_keeps_the_sizes_decided_before_it() {
    // From N = 4 on, the last device signals device N: off the mesh.
    let dir = temp_dir("sizes-error");
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/pallas/guarded_shift.py")).unwrap();
    let wrong = "    right = my_id + 1 if num_devices >= 4 else lax.rem(my_id + 1, num_devices)";
    let edited = source.replace("    right = lax.rem(my_id + 1, num_devices)", wrong);
    assert_ne!(edited, source);
    let file = dir.join("off_mesh.py");
    std::fs::write(&file, edited).unwrap();
    let (code, out, err) = semcheck(&["check", file.to_str().unwrap(), "--sizes", "2..5"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("ERROR at N = 4 (see the error below); decided before it: N = 2..3"), "{out}");
    assert!(out.contains("N = 2..3       proved"), "{out}");
    assert!(out.contains("not decided: N = 4 and every size after it"), "{out}");
    assert!(err.contains("error: at N = 4: ") && err.contains("off the mesh"), "{err}");
    // In JSON too: the case's verdict is `error`, with the error and the sizes decided.
    let (code, out, err) = semcheck(&["check", file.to_str().unwrap(), "--sizes", "2..5", "--json"]);
    assert_eq!(code, 2, "{out}{err}");
    let doc = crate::common::document(&out);
    assert_eq!((doc["verdict"].as_str(), doc["exit_code"].as_i64()), (Some("error"), Some(2)), "{doc}");
    let case = crate::common::only_case(&doc);
    assert!(case["error"].as_str().unwrap().contains("at N = 4: "), "{case}");
    let decided: Vec<(u64, &str)> = case["report"]["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["devices"].as_u64().unwrap(), s["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(decided, [(2, "proved"), (3, "proved")], "{case}");
}

#[test]
fn the_float_index_symbol_is_a_stated_modelling_choice() {
    let (code, out, _) = semcheck(&["semantics"]);
    assert_eq!(code, 0);
    assert!(out.contains("float-index-data (fixed: one-symbol)"), "{out}");
    assert!(out.contains("`float-index`"), "{out}");
}
