//! Single-edit mutants of a kernel: the edits a kernel author could plausibly get wrong,
//! made on the IR so that they apply to every front end alike (DSL kernels, Python
//! kernels) and are reported by the edited statement's [`StmtId`] and
//! [`Loc`](crate::ir::Loc).
//!
//! | operator | edit |
//! |---|---|
//! | [`Operator::Delete`] | delete a statement (a block with its body) |
//! | [`Operator::Duplicate`] | run a signal, wait, DMA start or DMA wait twice |
//! | [`Operator::Swap`] | swap a statement with the next one of its block |
//! | [`Operator::OtherDevice`] | signal or copy to the other neighbour (the device mirrored about this one on the axis) |
//! | [`Operator::OtherSemaphore`] | signal, wait or copy on another semaphore of the same kind |
//! | [`Operator::IndexOffByOne`] | an index of a view or semaphore array plus or minus one |
//! | [`Operator::DropGuard`] | drop a `@pl.when` guard: its body always runs |
//! | [`Operator::ShrinkWait`] | wait for less: the amount minus one, or half of it |
//! | [`Operator::DeleteSemaphore`] | delete every signal and wait on one REGULAR or barrier semaphore |
//!
//! A mutant is a whole [`Kernel`]; whether it compiles for a mesh, and what the checker
//! says about it, is the caller's business. [`same_operations`] tells a mutant that
//! compiles to exactly the operations of the original (an equivalent edit at that size).

use serde::Serialize;

use crate::expr::{BinOp, Expr};
use crate::ir::{
    Dest, DmaDesc, Index, Kernel, Level, RefExpr, Rhs, SemId, SemKind, SemRef, Stmt, StmtId, StmtKind, WaitPart,
};
use crate::program::{CellSpan, Op, Program};
use crate::stmt_text::{expr, sem, statement};

/// A kind of single edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operator {
    /// Delete a statement (a `when` or scope with its body).
    Delete,
    /// Run a signal, wait, DMA start or DMA wait twice.
    Duplicate,
    /// Swap a statement with the next one in its block.
    Swap,
    /// Signal or copy to the other neighbour: the device mirrored about this one on the
    /// axis the device id is computed from (`my_id + 1` becomes `my_id - 1`).
    OtherDevice,
    /// Signal, wait or copy on another semaphore of the same kind.
    OtherSemaphore,
    /// An index of a view or of a semaphore array, plus or minus one.
    IndexOffByOne,
    /// Drop a `@pl.when` guard: its body runs at every device and grid index.
    DropGuard,
    /// `semaphore_wait` for less: the amount minus one, or half of it.
    ShrinkWait,
    /// Drop a whole handshake: every signal and wait on one REGULAR or barrier semaphore
    /// (a signal and its wait are only ever redundant together).
    DeleteSemaphore,
}

impl Operator {
    /// Every operator.
    pub const ALL: [Operator; 9] = [
        Operator::Delete,
        Operator::Duplicate,
        Operator::Swap,
        Operator::OtherDevice,
        Operator::OtherSemaphore,
        Operator::IndexOffByOne,
        Operator::DropGuard,
        Operator::ShrinkWait,
        Operator::DeleteSemaphore,
    ];

    /// The verb of an edit that needs no detail: `delete`, `duplicate`, `drop the guard`.
    fn verb(self) -> &'static str {
        match self {
            Operator::DropGuard => "drop the guard",
            other => other.name(),
        }
    }

    /// The operator's name in reports: `delete`, `other-device`, ...
    pub fn name(self) -> &'static str {
        match self {
            Operator::Delete => "delete",
            Operator::Duplicate => "duplicate",
            Operator::Swap => "swap",
            Operator::OtherDevice => "other-device",
            Operator::OtherSemaphore => "other-semaphore",
            Operator::IndexOffByOne => "index-off-by-one",
            Operator::DropGuard => "drop-guard",
            Operator::ShrinkWait => "shrink-wait",
            Operator::DeleteSemaphore => "delete-semaphore",
        }
    }
}

/// One mutant: which statement was edited, how, and the edited kernel.
#[derive(Clone, Debug)]
pub struct Mutation {
    /// The operator.
    pub operator: Operator,
    /// The edited statement of the original kernel (the first of a swapped pair, the
    /// first use of a deleted semaphore).
    pub stmt: StmtId,
    /// The edit in the kernel's words: `delete pl.semaphore_wait(capacity_sem, 1)`.
    pub edit: String,
    /// What changed in the statement, for a report that already names it: `capacity_sem
    /// -> second`, `amount 2 -> 1`; empty for a deletion, duplication or dropped guard.
    pub detail: String,
    /// The mutated kernel.
    pub kernel: Kernel,
}

/// Whether a statement synchronises: a semaphore signal or wait, a DMA wait, or a
/// `pl.run_scoped` block of signals and waits (the second half of `neighbor_barrier`).
pub fn is_sync(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Signal { .. } | StmtKind::Wait { .. } | StmtKind::DmaWait { .. } => true,
        StmtKind::Scoped { body, .. } => {
            !body.is_empty() && body.iter().all(|s| matches!(s.kind, StmtKind::Signal { .. } | StmtKind::Wait { .. }))
        }
        _ => false,
    }
}

/// Every mutant of `kernel` made by `operators`: statement by statement in pre-order,
/// then the semaphore deletions in declaration order.
pub fn mutations(kernel: &Kernel, operators: &[Operator]) -> Vec<Mutation> {
    let units = MutationUnits::new(kernel, operators);
    (0..units.len()).flat_map(|unit| units.make(unit)).collect()
}

/// The mutants of [`mutations`], made a unit at a time, so that a caller never holds more
/// than a few mutated kernels (each is a whole copy of the kernel): unit `i` is the
/// mutants of the `i`-th statement the operators edit (pre-order, Pallas's own left
/// out), the last unit the semaphore deletions.
pub struct MutationUnits<'k> {
    kernel: &'k Kernel,
    sites: Vec<Site<'k>>,
    operators: &'k [Operator],
}

impl<'k> MutationUnits<'k> {
    /// The units of `kernel`'s mutants by `operators`.
    pub fn new(kernel: &'k Kernel, operators: &'k [Operator]) -> MutationUnits<'k> {
        let sites = sites(kernel).into_iter().filter(|site| !site.stmt.implicit).collect();
        MutationUnits { kernel, sites, operators }
    }

    /// The number of units: the statements edited, and the semaphore deletions.
    pub fn len(&self) -> usize {
        self.sites.len() + 1
    }

    /// Never: the semaphore deletions are a unit, even when they make no mutant.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The mutants of unit `unit` (none past the last).
    pub fn make(&self, unit: usize) -> Vec<Mutation> {
        let mut out = Vec::new();
        if let Some(site) = self.sites.get(unit) {
            for &op in self.operators {
                site.mutate(self.kernel, op, &mut out);
            }
        } else if unit == self.sites.len() && self.operators.contains(&Operator::DeleteSemaphore) {
            semaphore_deletions(self.kernel, &mut out);
        }
        out
    }
}

/// The deletions of every synchronising statement ([`is_sync`]) and of every handshake
/// ([`Operator::DeleteSemaphore`]): the mutants that say which synchronisation a kernel
/// could do without.
pub fn sync_deletions(kernel: &Kernel) -> Vec<Mutation> {
    // Only the synchronising sites are edited: every mutant is a whole kernel, and a
    // kernel of thousands of statements made thousands of them to keep a few dozen.
    let mut out = Vec::new();
    for site in sites(kernel).into_iter().filter(|site| is_sync(site.stmt)) {
        site.mutate(kernel, Operator::Delete, &mut out);
    }
    semaphore_deletions(kernel, &mut out);
    out
}

/// The semaphore a signal or wait statement uses.
fn signalled_or_waited(stmt: &Stmt) -> Option<SemId> {
    match &stmt.kind {
        StmtKind::Signal { sem, .. } | StmtKind::Wait { sem, .. } => Some(sem.sem),
        _ => None,
    }
}

/// For each REGULAR or barrier semaphore that is signalled or waited on, the kernel
/// without any of those statements.
fn semaphore_deletions(kernel: &Kernel, out: &mut Vec<Mutation>) {
    fn remove(body: &mut Vec<Stmt>, sem: SemId) {
        body.retain(|s| signalled_or_waited(s) != Some(sem));
        for s in body {
            if let Some(body) = s.children_mut() {
                remove(body, sem);
            }
        }
    }
    for (i, decl) in kernel.semaphores.iter().enumerate() {
        let sem = SemId(i as u32);
        if decl.kind == SemKind::Dma {
            continue;
        }
        let uses: Vec<(StmtId, &Stmt)> =
            kernel.statements().into_iter().filter(|(_, s)| signalled_or_waited(s) == Some(sem)).collect();
        let Some(&(first, _)) = uses.first() else { continue };
        let mut k = kernel.clone();
        remove(&mut k.body, sem);
        let lines: Vec<String> = uses.iter().filter_map(|(_, s)| s.loc.as_ref().map(|l| l.to_string())).collect();
        let detail = if lines.is_empty() {
            format!("{} statements", uses.len())
        } else {
            format!("{} statements: {}", uses.len(), lines.join(", "))
        };
        out.push(Mutation {
            operator: Operator::DeleteSemaphore,
            stmt: first,
            edit: format!("delete every signal and wait on {}", decl.name),
            detail,
            kernel: k,
        });
    }
}

/// Whether two programs run exactly the same operations on every device (cells compared
/// by identity, not by span offsets): a mutant that compiles to its original's
/// operations is an equivalent edit at that mesh size.
pub fn same_operations(a: &Program, b: &Program) -> bool {
    let spans = |op: &Op| -> [Option<CellSpan>; 2] {
        match *op {
            Op::LocalDma { src, dst, .. } | Op::RemoteDma { src, dst, .. } | Op::Compute { src, dst, .. } => {
                [Some(src), Some(dst)]
            }
            _ => [None, None],
        }
    };
    let blank = |op: &Op| -> Op {
        let none = CellSpan { start: 0, len: 0 };
        match *op {
            Op::LocalDma { sem, bytes, .. } => Op::LocalDma { src: none, dst: none, sem, bytes },
            Op::RemoteDma { target, send_sem, recv_sem, bytes, .. } => {
                Op::RemoteDma { src: none, dst: none, target, send_sem, recv_sem, bytes }
            }
            Op::Compute { kind, .. } => Op::Compute { kind, src: none, dst: none },
            other => other,
        }
    };
    let same_op = |p: &Op, q: &Op| {
        blank(p) == blank(q)
            && spans(p).iter().zip(spans(q)).all(|(s, t)| match (s, t) {
                (Some(s), Some(t)) => a.span(*s) == b.span(t),
                (None, None) => true,
                _ => false,
            })
    };
    a.cells.len() == b.cells.len()
        && a.sems_per_device == b.sems_per_device
        && a.devices.len() == b.devices.len()
        && a.devices
            .iter()
            .zip(&b.devices)
            .all(|(x, y)| x.ops.len() == y.ops.len() && x.ops.iter().zip(&y.ops).all(|(p, q)| same_op(p, q)))
}

/// A statement and where it sits: the block (a path of statement indices through nested
/// blocks) and its index in that block.
struct Site<'k> {
    block: Vec<usize>,
    index: usize,
    block_len: usize,
    id: StmtId,
    stmt: &'k Stmt,
}

fn sites(kernel: &Kernel) -> Vec<Site<'_>> {
    fn walk<'k>(body: &'k [Stmt], block: &mut Vec<usize>, out: &mut Vec<Site<'k>>) {
        for (index, stmt) in body.iter().enumerate() {
            let id = StmtId(out.len() as u32);
            out.push(Site { block: block.clone(), index, block_len: body.len(), id, stmt });
            block.push(index);
            walk(stmt.children(), block, out);
            block.pop();
        }
    }
    let mut out = Vec::new();
    walk(&kernel.body, &mut Vec::new(), &mut out);
    out
}

fn block_mut<'a>(body: &'a mut Vec<Stmt>, path: &[usize]) -> &'a mut Vec<Stmt> {
    match path.split_first() {
        None => body,
        Some((&i, rest)) => block_mut(body[i].children_mut().expect("a site's path only leads through blocks"), rest),
    }
}

/// A callback on each index expression of a statement, with its role (`source`, `semaphore`, ...).
type Visitor<'f> = dyn FnMut(&'static str, &mut Expr) + 'f;

fn visit_view_indices(role: &'static str, r: &mut RefExpr, f: &mut Visitor<'_>) {
    for level in &mut r.indexing {
        let Level::Index(indices) = level else { continue };
        for i in indices {
            match i {
                Index::At(e) | Index::Slice { start: e, .. } => f(role, e),
            }
        }
    }
}

fn visit_sem_index(role: &'static str, s: &mut SemRef, f: &mut Visitor<'_>) {
    if let Some(e) = &mut s.index {
        f(role, e);
    }
}

/// The semaphores a statement's behaviour depends on, by role (a DMA wait: only those its
/// part waits on).
fn sem_slots(kind: &mut StmtKind) -> Vec<(&'static str, &mut SemRef)> {
    match kind {
        StmtKind::Signal { sem, .. } | StmtKind::Wait { sem, .. } => vec![("semaphore", sem)],
        StmtKind::DmaStart(DmaDesc::Local { sem, .. }) => vec![("semaphore", sem)],
        StmtKind::DmaStart(DmaDesc::Remote { send_sem, recv_sem, .. }) => {
            vec![("send semaphore", send_sem), ("receive semaphore", recv_sem)]
        }
        StmtKind::DmaWait { dma: DmaDesc::Local { sem, .. }, .. } => vec![("semaphore", sem)],
        StmtKind::DmaWait { dma: DmaDesc::Remote { send_sem, recv_sem, .. }, part } => match part {
            WaitPart::All => vec![("send semaphore", send_sem), ("receive semaphore", recv_sem)],
            WaitPart::Send => vec![("send semaphore", send_sem)],
            WaitPart::Recv => vec![("receive semaphore", recv_sem)],
        },
        _ => Vec::new(),
    }
}

/// Every index a statement's behaviour depends on (views of copies and computations,
/// semaphore array elements), in a fixed order.
fn visit_indices(kind: &mut StmtKind, f: &mut Visitor<'_>) {
    match kind {
        StmtKind::DmaStart(DmaDesc::Local { src, dst, .. } | DmaDesc::Remote { src, dst, .. }) => {
            visit_view_indices("source", src, f);
            visit_view_indices("destination", dst, f);
        }
        StmtKind::Assign { dst, rhs } => {
            visit_view_indices("destination", dst, f);
            if let Rhs::Load(src) | Rhs::Map { src, .. } = rhs {
                visit_view_indices("source", src, f);
            }
        }
        StmtKind::AddAssign { dst, src } => {
            visit_view_indices("destination", dst, f);
            visit_view_indices("source", src, f);
        }
        _ => {}
    }
    for (role, s) in sem_slots(kind) {
        visit_sem_index(role, s, f);
    }
}

/// `(2 * axis_index(a) - e + axis_size(a)) % axis_size(a)`: the device mirrored about
/// this one on axis `a`, for `e` in `0..axis_size(a)`.
fn mirrored(axis: &str, e: &Expr) -> Expr {
    let me = Expr::AxisIndex(axis.to_string());
    let size = Expr::AxisSize(axis.to_string());
    (Expr::Const(2) * me - e.clone() + size.clone()) % size
}

/// The first axis whose index an expression reads.
fn axis_of(e: &Expr) -> Option<&str> {
    match e {
        Expr::AxisIndex(a) => Some(a),
        Expr::Neg(a) | Expr::Not(a) => axis_of(a),
        Expr::Binary(_, a, b) => axis_of(a).or_else(|| axis_of(b)),
        _ => None,
    }
}

/// The device ids a statement targets, as (axis, expression) pairs that can be mirrored.
fn dest_of(kind: &mut StmtKind) -> Option<&mut Dest> {
    match kind {
        StmtKind::Signal { device, .. } | StmtKind::DmaStart(DmaDesc::Remote { device, .. }) => Some(device),
        _ => None,
    }
}

fn mirror_targets(dest: &mut Dest) -> Vec<(String, &mut Expr)> {
    match dest {
        Dest::Own => Vec::new(),
        Dest::Mesh(es) => es.iter_mut().filter_map(|e| Some((axis_of(e)?.to_string(), e))).collect(),
        Dest::Axes(axes) => axes.iter_mut().map(|(a, e)| (a.clone(), e)).collect(),
        // A LOGICAL id names a flat index, not an axis: there is no neighbour to mirror to.
        Dest::Logical(_) => Vec::new(),
    }
}

fn plus(e: &Expr, k: i64) -> Expr {
    match e {
        Expr::Const(c) => Expr::Const(c + k),
        _ if k >= 0 => Expr::Binary(BinOp::Add, Box::new(e.clone()), Box::new(Expr::Const(k))),
        _ => Expr::Binary(BinOp::Sub, Box::new(e.clone()), Box::new(Expr::Const(-k))),
    }
}

/// An index plus `delta` (one or minus one). A ring index `a % n` is shifted inside the
/// remainder, `(a + 1) % n` or `(a - 1 + n) % n`, as a kernel author would get it wrong:
/// the neighbouring slot of the ring rather than one past the end.
fn off_by_one(e: &Expr, delta: i64) -> Expr {
    match e {
        Expr::Binary(BinOp::Rem, a, n) => {
            let shifted =
                if delta >= 0 { plus(a, delta) } else { Expr::Binary(BinOp::Add, Box::new(plus(a, delta)), n.clone()) };
            Expr::Binary(BinOp::Rem, Box::new(shifted), n.clone())
        }
        _ => plus(e, delta),
    }
}

impl Site<'_> {
    /// The kernel with this site's block edited by `f(block, index)`.
    fn edited(&self, kernel: &Kernel, f: impl FnOnce(&mut Vec<Stmt>, usize)) -> Kernel {
        let mut k = kernel.clone();
        f(block_mut(&mut k.body, &self.block), self.index);
        k
    }

    /// The kernel with this site's statement edited by `f`.
    fn with_kind(&self, kernel: &Kernel, f: impl FnOnce(&mut StmtKind)) -> Kernel {
        self.edited(kernel, |block, i| f(&mut block[i].kind))
    }

    fn mutate(&self, kernel: &Kernel, op: Operator, out: &mut Vec<Mutation>) {
        let text = statement(kernel, self.stmt);
        let mut push = |detail: String, k: Kernel| {
            let edit = match op {
                Operator::Delete | Operator::Duplicate | Operator::DropGuard => format!("{} {text}", op.verb()),
                Operator::Swap => format!("swap {text} {detail}"),
                _ => format!("{text}: {detail}"),
            };
            out.push(Mutation { operator: op, stmt: self.id, edit, detail, kernel: k })
        };
        match op {
            // Without its load, what reads the variable cannot compile: not a mutant (nor
            // without a copy's values, which its DMA statement brings).
            Operator::Delete if matches!(self.stmt.kind, StmtKind::ScalarLoad { .. } | StmtKind::ScalarCopy { .. }) => {
            }
            Operator::Delete => push(
                String::new(),
                self.edited(kernel, |b, i| {
                    b.remove(i);
                }),
            ),
            Operator::Duplicate => {
                if matches!(
                    self.stmt.kind,
                    StmtKind::Signal { .. } | StmtKind::Wait { .. } | StmtKind::DmaStart(_) | StmtKind::DmaWait { .. }
                ) {
                    let k = self.edited(kernel, |b, i| {
                        let copy = b[i].clone();
                        b.insert(i, copy);
                    });
                    push(String::new(), k);
                }
            }
            Operator::Swap => {
                if self.index + 1 < self.block_len {
                    let mut k = kernel.clone();
                    let block = block_mut(&mut k.body, &self.block);
                    if block[self.index].kind != block[self.index + 1].kind && !block[self.index + 1].implicit {
                        let next = statement(kernel, &block[self.index + 1]);
                        block.swap(self.index, self.index + 1);
                        push(format!("with {next}"), k);
                    }
                }
            }
            Operator::OtherDevice => {
                let mut kind = self.stmt.kind.clone();
                let n = dest_of(&mut kind).map_or(0, |d| mirror_targets(d).len());
                for j in 0..n {
                    let mut old = String::new();
                    let k = self.with_kind(kernel, |kind| {
                        if let Some(d) = dest_of(kind) {
                            let (axis, e) = mirror_targets(d).swap_remove(j);
                            old = expr(e);
                            *e = mirrored(&axis, e);
                        }
                    });
                    push(format!("device_id {old} -> the other neighbour"), k);
                }
            }
            Operator::OtherSemaphore => {
                let mut kind = self.stmt.kind.clone();
                let slots: Vec<(&'static str, SemRef)> =
                    sem_slots(&mut kind).into_iter().map(|(role, s)| (role, s.clone())).collect();
                for (j, (role, current)) in slots.iter().enumerate() {
                    let Some(decl) = kernel.semaphore(current.sem) else { continue };
                    for (other_id, other) in kernel.semaphores.iter().enumerate() {
                        let other_id = SemId(other_id as u32);
                        if other_id == current.sem
                            || other.kind != decl.kind
                            || other.len.is_some() != decl.len.is_some()
                        {
                            continue;
                        }
                        let replacement = SemRef { sem: other_id, index: current.index.clone() };
                        let new_name = sem(kernel, &replacement);
                        let k = self.with_kind(kernel, |kind| {
                            if let Some((_, s)) = sem_slots(kind).into_iter().nth(j) {
                                *s = replacement;
                            }
                        });
                        let what = if slots.len() > 1 { format!("{role} ") } else { String::new() };
                        push(format!("{what}{} -> {new_name}", sem(kernel, current)), k);
                    }
                }
            }
            Operator::IndexOffByOne => {
                let mut kind = self.stmt.kind.clone();
                let mut found: Vec<(&'static str, Expr)> = Vec::new();
                visit_indices(&mut kind, &mut |role, e| found.push((role, e.clone())));
                for (j, (role, e)) in found.iter().enumerate() {
                    for delta in [1, -1] {
                        let changed = off_by_one(e, delta);
                        let k = self.with_kind(kernel, |kind| {
                            let mut seen = 0;
                            visit_indices(kind, &mut |_, slot| {
                                if seen == j {
                                    *slot = changed.clone();
                                }
                                seen += 1;
                            });
                        });
                        push(format!("{role} index {} -> {}", expr(e), expr(&changed)), k);
                    }
                }
            }
            Operator::DropGuard => {
                if let StmtKind::When { .. } = self.stmt.kind {
                    let k = self.edited(kernel, |b, i| {
                        let StmtKind::When { body, .. } = b.remove(i).kind else { unreachable!("checked above") };
                        for (j, s) in body.into_iter().enumerate() {
                            b.insert(i + j, s);
                        }
                    });
                    push(String::new(), k);
                }
            }
            Operator::DeleteSemaphore => {}
            Operator::ShrinkWait => {
                if let StmtKind::Wait { amount, .. } = &self.stmt.kind {
                    let shrunk: Vec<Expr> = match amount {
                        Expr::Const(c) if *c >= 1 => {
                            let mut v = vec![Expr::Const(c - 1)];
                            if c / 2 != c - 1 {
                                v.push(Expr::Const(c / 2));
                            }
                            v
                        }
                        Expr::Const(_) => Vec::new(),
                        e => vec![plus(e, -1), Expr::Binary(BinOp::Div, Box::new(e.clone()), Box::new(Expr::Const(2)))],
                    };
                    for a in shrunk {
                        let desc = format!("amount {} -> {}", expr(amount), expr(&a));
                        let k = self.with_kind(kernel, |kind| {
                            if let StmtKind::Wait { amount, .. } = kind {
                                *amount = a;
                            }
                        });
                        push(desc, k);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::trace;
    use crate::ir::MemorySpace;

    fn kernel() -> Kernel {
        trace("t", |k| {
            k.grid(&[2]);
            let x = k.input("x", MemorySpace::Hbm, &[]);
            let buf = k.scratch("buf", MemorySpace::Hbm, &[2]);
            let (send, recv) = (k.dma_semaphore("send"), k.dma_semaphore("recv"));
            let (cap, other) = (k.regular_semaphore("cap"), k.regular_semaphore("other"));
            let right = (k.axis_index("x") + 1) % 3;
            k.when(k.program_id(0).equals(0), |k| {
                let dma = k.make_async_remote_copy(&x, &buf.at(k.program_id(0) % 2), &send, &recv, &right);
                dma.start();
                dma.wait_recv();
            });
            k.semaphore_signal(&cap, 1, &right);
            k.semaphore_wait(&cap, 2);
            k.semaphore_signal(&other, 1, None::<Expr>);
            k.semaphore_wait(&other, 1);
        })
        .unwrap()
    }

    #[test]
    fn statements_inside_a_loop_are_mutated_in_place() {
        let k = trace("t", |k| {
            let (cap, other) = (k.regular_semaphore("cap"), k.regular_semaphore("other"));
            k.fori_loop("i", 2, |k, _| {
                k.semaphore_signal(&cap, 1, None::<Expr>);
                k.semaphore_wait(&cap, 1);
                k.semaphore_signal(&other, 1, None::<Expr>);
            });
            k.semaphore_wait(&other, 2);
        })
        .unwrap();
        let all = mutations(&k, &Operator::ALL);
        let edits: Vec<&str> = all.iter().map(|m| m.edit.as_str()).collect();
        assert!(edits.contains(&"delete pl.semaphore_wait(cap, 1)"), "{edits:?}");
        for m in &all {
            assert_ne!(m.kernel, k, "{}", m.edit);
        }
    }

    fn edits(op: Operator) -> Vec<String> {
        mutations(&kernel(), &[op]).into_iter().map(|m| m.edit).collect()
    }

    #[test]
    fn each_operator_makes_the_edits_it_names() {
        let k = kernel();
        let all = mutations(&k, &Operator::ALL);
        // Every mutant differs from the kernel, and reports a statement of the original.
        for m in &all {
            assert_ne!(m.kernel, k, "{}", m.edit);
            assert!(k.statement(m.stmt).is_some());
        }
        assert_eq!(edits(Operator::Delete).len(), 7);
        assert_eq!(edits(Operator::Duplicate).len(), 6);
        assert_eq!(edits(Operator::Swap).len(), 5);
        assert_eq!(edits(Operator::DropGuard), ["drop the guard @pl.when(program_id(0) == 0)"]);
        assert_eq!(
            edits(Operator::ShrinkWait),
            ["pl.semaphore_wait(cap, 2): amount 2 -> 1", "pl.semaphore_wait(other, 1): amount 1 -> 0"]
        );
        // The remote copy's start and the signal to the right (the signal to this device
        // has no other neighbour).
        assert_eq!(edits(Operator::OtherDevice).len(), 2);
        // send <-> recv in the start, recv in the wait_recv, cap <-> other four times.
        let other = edits(Operator::OtherSemaphore);
        assert_eq!(other.len(), 7, "{other:#?}");
        assert!(other.contains(&"pl.semaphore_wait(cap, 2): cap -> other".to_string()));
        // buf.at[program_id(0) % 2] in the start, +1 and -1 within the ring of slots.
        assert_eq!(
            edits(Operator::IndexOffByOne),
            [
                "make_async_remote_copy(x, buf.at[program_id(0) % 2], send, recv, device_id=(axis_index(x) + 1) % 3).start(): destination index program_id(0) % 2 -> (program_id(0) + 1) % 2",
                "make_async_remote_copy(x, buf.at[program_id(0) % 2], send, recv, device_id=(axis_index(x) + 1) % 3).start(): destination index program_id(0) % 2 -> ((program_id(0) - 1) + 2) % 2",
            ]
        );
        let deletion = &mutations(&k, &[Operator::Delete])[4];
        assert_eq!((deletion.edit.as_str(), deletion.detail.as_str()), ("delete pl.semaphore_wait(cap, 2)", ""));
    }

    #[test]
    fn pallas_s_own_statements_are_not_edited() {
        // The guarded copy marked as Pallas's (the front end marks its pipeline's copies).
        let mut k = kernel();
        let when = k.body.iter_mut().find(|s| matches!(s.kind, StmtKind::When { .. })).unwrap();
        when.implicit = true;
        for child in when.children_mut().unwrap() {
            child.implicit = true;
        }
        let all = mutations(&k, &Operator::ALL);
        assert!(!all.is_empty());
        for m in &all {
            assert!(!m.edit.contains("pl.when") && !m.edit.contains("make_async_remote_copy"), "{}", m.edit);
        }
    }

    #[test]
    fn the_other_neighbour_is_the_mirrored_device() {
        use crate::expr::EvalEnv;
        use crate::mesh::Mesh;
        let right = (Expr::AxisIndex("x".into()) + 1i64) % 5i64;
        let mesh = Mesh::ring(5).unwrap();
        for d in 0..5usize {
            let env = EvalEnv { mesh: &mesh, coords: &[d], grid: &[1], program_ids: &[0], vars: &[], poisoned: &[] };
            assert_eq!(mirrored("x", &right).eval(&env).unwrap(), ((d + 4) % 5) as i64);
        }
    }

    #[test]
    fn sync_deletions_are_signals_waits_dma_waits_barrier_scopes_and_handshakes() {
        let deleted: Vec<String> = sync_deletions(&kernel()).into_iter().map(|m| m.edit).collect();
        assert_eq!(deleted.len(), 7, "{deleted:#?}");
        assert!(deleted.iter().all(|e| e.contains("wait") || e.contains("signal")), "{deleted:#?}");
        assert_eq!(deleted[5..], ["delete every signal and wait on cap", "delete every signal and wait on other"]);
    }

    #[test]
    fn deleting_a_semaphore_drops_its_signals_and_waits_everywhere() {
        let k = kernel();
        let cap = &mutations(&k, &[Operator::DeleteSemaphore])[0];
        assert_eq!(cap.stmt, StmtId(3));
        assert_eq!(cap.kernel.statements().len(), k.statements().len() - 2);
        assert!(cap.kernel.statements().iter().all(|(_, s)| signalled_or_waited(s) != Some(SemId(2))));
    }
}
