//! A kernel statement in the kernel's own words, Pallas-style:
//! `pl.semaphore_wait(capacity_sem, 1)`,
//! `make_async_remote_copy(x_ref, hbm_buf.at[program_id(0) % 2], …).start()`.
//!
//! This is what reports name a statement by when its front end gave no source text (DSL
//! kernels); a Python kernel's [`Loc`] carries the line itself. A block
//! (`@pl.when`, `pl.run_scoped`) is named by its header only.

use crate::expr::Expr;
use crate::ir::{
    Data, Dest, DmaDesc, Index, Kernel, Level, Loc, RefExpr, Rhs, ScalarRange, SemRef, Stmt, StmtId, StmtKind, WaitPart,
};
use std::collections::{BTreeMap, BTreeSet};

/// An expression without its outermost parentheses: `program_id(0) % 2`.
pub fn expr(e: &Expr) -> String {
    let s = e.to_string();
    match s.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        // Only when the two parentheses match each other: `(a) + (b)` keeps them.
        Some(inner) if balanced(inner) => inner.to_string(),
        _ => s,
    }
}

fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

fn index(i: &Index) -> String {
    match i {
        Index::At(e) => expr(e),
        Index::Slice { start, size, step: 1 } => format!("pl.ds({}, {})", expr(start), expr(size)),
        Index::Slice { start, size, step } => format!("pl.ds({}, {}, {step})", expr(start), expr(size)),
    }
}

/// A view: `hbm_buf.at[program_id(0) % 2]`.
pub fn view(kernel: &Kernel, r: &RefExpr) -> String {
    let mut out = kernel.buffer(r.buffer).map_or_else(|| format!("buffer#{}", r.buffer.0), |b| b.name.clone());
    for level in &r.indexing {
        match level {
            Level::Index(indices) => {
                let parts: Vec<String> = indices.iter().map(index).collect();
                out.push_str(&format!(".at[{}]", parts.join(", ")));
            }
            Level::Reshape(shape) => {
                let parts: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
                out.push_str(&format!(".reshape({})", parts.join(", ")));
            }
        }
    }
    out
}

/// A semaphore: `capacity_sem`, `recv_sems.at[program_id(0)]`.
pub fn sem(kernel: &Kernel, s: &SemRef) -> String {
    let name = kernel.semaphore(s.sem).map_or_else(|| format!("sem#{}", s.sem.0), |d| d.name.clone());
    match &s.index {
        Some(i) => format!("{name}.at[{}]", expr(i)),
        None => name,
    }
}

/// `device_id=...`, or `None` for this device.
pub fn dest(d: &Dest) -> Option<String> {
    match d {
        Dest::Own => None,
        Dest::Mesh(es) if es.len() == 1 => Some(format!("device_id={}", expr(&es[0]))),
        Dest::Mesh(es) => {
            let parts: Vec<String> = es.iter().map(expr).collect();
            Some(format!("device_id=({})", parts.join(", ")))
        }
        Dest::Axes(axes) => {
            let parts: Vec<String> = axes.iter().map(|(a, e)| format!("'{a}': {}", expr(e))).collect();
            Some(format!("device_id={{{}}}", parts.join(", ")))
        }
        Dest::Logical(e) => Some(format!("device_id={}, device_id_type=LOGICAL", expr(e))),
    }
}

/// A computed value in the kernel's words: `x[...] + y[...]`, `dot_general(a[...], b[...])`.
pub fn data(kernel: &Kernel, d: &Data) -> String {
    match d {
        Data::Zeros => "0".to_string(),
        Data::Load(src) => format!("{}[...]", view(kernel, src)),
        Data::Add(a, b) => format!("{} + {}", data(kernel, a), data(kernel, b)),
        Data::Apply { func, args } => {
            let mut out = String::new();
            let mut parts = func.split("{}");
            out.push_str(parts.next().unwrap_or(""));
            for (arg, rest) in args.iter().zip(parts) {
                out.push_str(&data(kernel, arg));
                out.push_str(rest);
            }
            out
        }
        Data::Const(name) => name.clone(),
        Data::Index(e) => expr(e),
    }
}

/// The descriptor a copy is made by: `make_async_copy(src, dst, sem)`.
pub fn dma(kernel: &Kernel, d: &DmaDesc) -> String {
    match d {
        DmaDesc::Local { src, dst, sem: s } => {
            format!("make_async_copy({}, {}, {})", view(kernel, src), view(kernel, dst), sem(kernel, s))
        }
        DmaDesc::Remote { src, dst, send_sem, recv_sem, device } => {
            let mut args = vec![view(kernel, src), view(kernel, dst), sem(kernel, send_sem), sem(kernel, recv_sem)];
            args.extend(dest(device));
            format!("make_async_remote_copy({})", args.join(", "))
        }
    }
}

/// One statement (a block by its header).
pub fn statement(kernel: &Kernel, stmt: &Stmt) -> String {
    match &stmt.kind {
        StmtKind::When { cond, .. } => format!("@pl.when({})", expr(cond)),
        StmtKind::Launch(l) => format!("pallas_call({})", l.name),
        StmtKind::Scoped { sems, .. } => {
            let names: Vec<String> = sems
                .iter()
                .map(|&s| kernel.semaphore(s).map_or_else(|| format!("sem#{}", s.0), |d| d.name.clone()))
                .collect();
            format!("pl.run_scoped({})", names.join(", "))
        }
        StmtKind::Loop { vars, init, count, cond, .. } => {
            let carries: Vec<String> = vars.iter().zip(init).map(|(v, i)| format!("{v}={}", expr(i))).collect();
            match (count, cond) {
                (Some(n), _) => format!("fori_loop(0, {n}, {})", carries.join(", ")),
                (None, Some(c)) => format!("while_loop({}, {})", expr(c), carries.join(", ")),
                (None, None) => format!("loop({})", carries.join(", ")),
            }
        }
        StmtKind::DmaStart(d) => format!("{}.start()", dma(kernel, d)),
        StmtKind::DmaWait { dma: d, part } => {
            let wait = match part {
                WaitPart::All => "wait",
                WaitPart::Send => "wait_send",
                WaitPart::Recv => "wait_recv",
            };
            format!("{}.{wait}()", dma(kernel, d))
        }
        StmtKind::Signal { sem: s, inc, device } => {
            let mut args = vec![sem(kernel, s), expr(inc)];
            args.extend(dest(device));
            format!("pl.semaphore_signal({})", args.join(", "))
        }
        StmtKind::Wait { sem: s, amount } => format!("pl.semaphore_wait({}, {})", sem(kernel, s), expr(amount)),
        StmtKind::Assign { dst, rhs } => {
            let value = match rhs {
                Rhs::Zeros => format!("jnp.zeros_like({})", view(kernel, dst)),
                Rhs::Load(src) => format!("{}[...]", view(kernel, src)),
                Rhs::Map { func, src } => func.replace("{}", &format!("{}[...]", view(kernel, src))),
                Rhs::Compute { value, .. } => data(kernel, value),
            };
            format!("{}[...] = {value}", view(kernel, dst))
        }
        StmtKind::AddAssign { dst, src } => format!("{}[...] += {}[...]", view(kernel, dst), view(kernel, src)),
        StmtKind::ScalarLoad { var, scalar, index } => {
            format!("{var} = {}[{}]", scalar_name(kernel, *scalar), expr(index))
        }
        StmtKind::ScalarStore { scalar, index, value } => {
            format!("{}[{}] = {}", scalar_name(kernel, *scalar), expr(index), expr(value))
        }
        StmtKind::ScalarCopy { scalar, dst, source, src } => format!(
            "{}[{} elements from {}] = {}[{} elements from {}]",
            scalar_name(kernel, *scalar),
            range_len(dst),
            expr(&dst.start),
            scalar_name(kernel, *source),
            range_len(src),
            expr(&src.start)
        ),
    }
}

/// How many elements a scalar range has: its `count`, or its size.
fn range_len(range: &ScalarRange) -> String {
    range.count.as_ref().map_or_else(|| range.len().to_string(), expr)
}

fn scalar_name(kernel: &Kernel, scalar: usize) -> String {
    kernel.scalars.get(scalar).map_or_else(|| format!("scalar#{scalar}"), |d| d.name.clone())
}

/// Where a statement is and what it says: `psum.py:57 remote.start()` when the front end
/// knows the line's text, else the location followed by [`statement`], or the statement
/// alone when its location is unknown.
pub fn located(kernel: &Kernel, stmt: &Stmt) -> String {
    at(stmt.loc.as_ref(), &statement(kernel, stmt))
}

/// A statement's location and its words (from [`statement`]), as [`located`] shows them.
pub fn at(loc: Option<&Loc>, statement: &str) -> String {
    match loc {
        Some(loc) if loc.text.is_some() => loc.to_string(),
        Some(loc) => format!("{loc} {statement}"),
        None => statement.to_string(),
    }
}

/// The labels of statements listed together, each as [`at`] shows it, told apart where
/// one source line stands for several statements (a helper called with other arguments,
/// a descriptor's `.wait()` as its send and receive halves): those labels add the
/// statement's words (`psum.py:9 dma.wait()  [….wait_recv()]`), and where the words are
/// the same too, which of them it is in kernel order (`[…, 2 of 3]`). An item is
/// (location, words, pre-order number); an item may repeat.
pub fn labels(items: &[(Option<&Loc>, &str, StmtId)]) -> Vec<String> {
    let bases: Vec<String> = items.iter().map(|&(loc, words, _)| at(loc, words)).collect();
    let mut by_line: BTreeMap<&str, BTreeSet<StmtId>> = BTreeMap::new();
    let mut by_words: BTreeMap<(&str, &str), BTreeSet<StmtId>> = BTreeMap::new();
    for (&(_, words, id), base) in items.iter().zip(&bases) {
        by_line.entry(base).or_default().insert(id);
        by_words.entry((base, words)).or_default().insert(id);
    }
    items
        .iter()
        .zip(&bases)
        .map(|(&(_, words, id), base)| {
            if by_line[base.as_str()].len() < 2 {
                return base.clone();
            }
            let same = &by_words[&(base.as_str(), words)];
            match same.iter().position(|&other| other == id) {
                Some(k) if same.len() > 1 => format!("{base}  [{words}, {} of {}]", k + 1, same.len()),
                _ => format!("{base}  [{words}]"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::{trace, zeros_like};
    use crate::ir::MemorySpace;

    #[test]
    fn one_source_line_of_several_statements_is_told_apart_by_its_words_then_its_order() {
        let at = |line: u32, text: &str| Loc { file: "k.py".into(), line, text: Some(text.into()) };
        let (wait, sig, other) = (at(9, "dma.wait()"), at(4, "signal(sem, 1)"), at(7, "x[...] = 0"));
        let items = [
            (Some(&wait), "dma.wait_send()", StmtId(1)),
            (Some(&wait), "dma.wait_send()", StmtId(1)),
            (Some(&wait), "dma.wait_recv()", StmtId(2)),
            (Some(&sig), "pl.semaphore_signal(sem, 1)", StmtId(5)),
            (Some(&sig), "pl.semaphore_signal(sem, 1)", StmtId(3)),
            (Some(&other), "x = zeros", StmtId(6)),
            (None, "o = zeros", StmtId(7)),
        ];
        assert_eq!(
            labels(&items),
            [
                "k.py:9 dma.wait()  [dma.wait_send()]",
                "k.py:9 dma.wait()  [dma.wait_send()]",
                "k.py:9 dma.wait()  [dma.wait_recv()]",
                "k.py:4 signal(sem, 1)  [pl.semaphore_signal(sem, 1), 2 of 2]",
                "k.py:4 signal(sem, 1)  [pl.semaphore_signal(sem, 1), 1 of 2]",
                "k.py:7 x[...] = 0",
                "o = zeros",
            ]
        );
    }

    #[test]
    fn statements_read_like_pallas() {
        let kernel = trace("t", |k| {
            k.grid(&[2]);
            let x = k.input("x", MemorySpace::Hbm, &[]);
            let buf = k.scratch("buf", MemorySpace::Hbm, &[2]);
            let o = k.output("o", MemorySpace::Vmem, &[]);
            let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
            let cap = k.regular_semaphore("cap");
            let right = (k.axis_index("x") + 1) % 2;
            k.when(k.program_id(0).equals(0), |k| {
                let dma = k.make_async_remote_copy(&x, &buf.at(k.program_id(0) % 2), &send, &recv, &right);
                dma.start();
                dma.wait_recv();
            });
            k.semaphore_signal(&cap, 1, &right);
            k.semaphore_wait(&cap, 1);
            o.assign(zeros_like(&o));
        })
        .unwrap();
        let text: Vec<String> = kernel.statements().iter().map(|(_, s)| statement(&kernel, s)).collect();
        assert_eq!(
            text,
            [
                "@pl.when(program_id(0) == 0)",
                "make_async_remote_copy(x, buf.at[program_id(0) % 2], send, recv, device_id=(axis_index(x) + 1) % 2).start()",
                "make_async_remote_copy(x, buf.at[program_id(0) % 2], send, recv, device_id=(axis_index(x) + 1) % 2).wait_recv()",
                "pl.semaphore_signal(cap, 1, device_id=(axis_index(x) + 1) % 2)",
                "pl.semaphore_wait(cap, 1)",
                "o[...] = jnp.zeros_like(o)",
            ]
        );
        let (_, wait) = kernel.statements()[4];
        assert!(located(&kernel, wait).ends_with(" pl.semaphore_wait(cap, 1)"), "{}", located(&kernel, wait));
        let mut py = wait.clone();
        py.loc = Some(Loc { file: "/k/kernel.py".into(), line: 57, text: Some("pl.semaphore_wait(cap, 1)".into()) });
        assert_eq!(located(&kernel, &py), "kernel.py:57 pl.semaphore_wait(cap, 1)");
    }

    #[test]
    fn only_matching_outer_parentheses_are_dropped() {
        let e = Expr::Binary(
            crate::expr::BinOp::Add,
            Box::new(Expr::ProgramId(0) % 2i64),
            Box::new(Expr::AxisIndex("x".into()) % 2i64),
        );
        assert_eq!(expr(&e), "(program_id(0) % 2) + (axis_index(x) % 2)");
        assert_eq!(expr(&Expr::Const(3)), "3");
    }
}
