//! A DSL that reads like the Pallas kernel it models, by tracing Rust code into the IR.
//!
//! ```
//! use semcheck_model::dsl::{trace, zeros_like};
//! use semcheck_model::ir::MemorySpace;
//!
//! // ppermute: every device pushes its shard to its right neighbour.
//! let n = 4;
//! let kernel = trace("right_shift", |k| {
//!     let x_ref = k.input("x_ref", MemorySpace::Hbm, &[]);
//!     let y_ref = k.output("y_ref", MemorySpace::Hbm, &[]);
//!     let send_sem = k.dma_semaphore("send_sem");
//!     let recv_sem = k.dma_semaphore("recv_sem");
//!     let my_id = k.axis_index("x");
//!     let target = (my_id + 1) % n;
//!     let dma = k.make_async_remote_copy(&x_ref, &y_ref, &send_sem, &recv_sem, target);
//!     dma.start();
//!     dma.wait();
//! })
//! .unwrap();
//! assert_eq!(kernel.body.len(), 2);
//! # let _ = zeros_like;
//! ```
//!
//! Statements are recorded in the order the Rust code runs, exactly as `jax.jit` traces
//! Python: Rust `if` and `for` are trace-time control flow, [`KernelBuilder::when`] is a
//! run-time branch. Handles ([`Ref`], [`Sem`], [`Dma`]) borrow the builder, so
//! `dma.start()` and `o_ref += &vmem_recv` record into the kernel being traced.

use std::cell::RefCell;
use std::ops::AddAssign;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{ErrorKind, ModelError};
use crate::expr::Expr;
use crate::ir::{
    BufferDecl, BufferId, BufferRole, Data, Dest, DmaDesc, Index, Kernel, Level, Loc, MemorySpace, RefExpr, Rhs,
    SemDecl, SemId, SemKind, SemRef, Stmt, StmtKind, WaitPart,
};

/// The default size of a cell: one `(8, 128)` float32 tile.
pub const DEFAULT_CELL_BYTES: u32 = 8 * 128 * 4;

static NEXT_BUILDER: AtomicU64 = AtomicU64::new(1);

struct Draft {
    kernel: Kernel,
    blocks: Vec<Vec<Stmt>>,
    barrier: Option<SemId>,
    cell_bytes: u32,
    errors: Vec<String>,
    /// The launch being traced ([`KernelBuilder::launch`]), if any.
    launch: Option<LaunchDraft>,
    /// The barrier semaphore of each `collective_id` of a program's launches.
    barriers: Vec<(Option<u32>, SemId)>,
}

/// What a launch being traced has set: its compiler parameters, and the semaphores it
/// declared or hands out.
#[derive(Default)]
struct LaunchDraft {
    grid: Vec<usize>,
    collective_id: Option<u32>,
    skip_device_barrier: bool,
    declared: Vec<SemId>,
    hands_out: Vec<SemId>,
}

/// The tracer a kernel body receives; every DSL call records into it.
pub struct KernelBuilder {
    id: u64,
    draft: RefCell<Draft>,
}

/// Traces `body` into a [`Kernel`] named `name`.
///
/// Errors found while tracing (a handle from another kernel, a zero-sized shape) are
/// returned here; errors that depend on the mesh (indices out of range, device ids off
/// the mesh) are found by [`crate::compile::compile`].
pub fn trace(name: &str, body: impl FnOnce(&KernelBuilder)) -> Result<Kernel, ModelError> {
    let builder = KernelBuilder {
        id: NEXT_BUILDER.fetch_add(1, Ordering::Relaxed),
        draft: RefCell::new(Draft {
            kernel: Kernel {
                name: name.to_string(),
                grid: Vec::new(),
                buffers: Vec::new(),
                semaphores: Vec::new(),
                scalars: Vec::new(),
                collective_id: None,
                skip_device_barrier: false,
                allow_collective_id_without_custom_barrier: false,
                body: Vec::new(),
            },
            blocks: vec![Vec::new()],
            barrier: None,
            cell_bytes: DEFAULT_CELL_BYTES,
            errors: Vec::new(),
            launch: None,
            barriers: Vec::new(),
        }),
    };
    body(&builder);
    let mut draft = builder.draft.into_inner();
    if let Some(e) = draft.errors.first() {
        return Err(ModelError::new(ErrorKind::BadDeclaration, format!("kernel {name}: {e}")));
    }
    draft.kernel.body = draft.blocks.pop().unwrap_or_default();
    Ok(draft.kernel)
}

/// A view of a buffer (`x_ref`, `hbm_buf.at[slot]`).
#[derive(Clone)]
pub struct Ref<'k> {
    k: &'k KernelBuilder,
    r: RefExpr,
}

/// A semaphore or semaphore array handle.
#[derive(Clone)]
pub struct Sem<'k> {
    k: &'k KernelBuilder,
    r: SemRef,
}

/// A DMA descriptor handle; `start` and the waits record statements.
#[derive(Clone)]
pub struct Dma<'k> {
    k: &'k KernelBuilder,
    desc: DmaDesc,
}

/// `pl.ds(start, size)`: a slice of `size` positions starting at `start`.
pub fn ds(start: impl Into<Expr>, size: usize) -> Index {
    Index::Slice { start: start.into(), size: Expr::Const(size as i64), step: 1 }
}

/// `jnp.zeros_like(x)`: the empty sum.
pub fn zeros_like(_like: &Ref<'_>) -> Rhs {
    Rhs::Zeros
}

/// Something usable as one index of `.at[...]`.
pub trait IntoIndex {
    /// Converts into an [`Index`].
    fn into_index(self) -> Index;
}

impl IntoIndex for Index {
    fn into_index(self) -> Index {
        self
    }
}

impl IntoIndex for Expr {
    fn into_index(self) -> Index {
        Index::At(self)
    }
}

impl IntoIndex for &Expr {
    fn into_index(self) -> Index {
        Index::At(self.clone())
    }
}

impl IntoIndex for i64 {
    fn into_index(self) -> Index {
        Index::At(Expr::Const(self))
    }
}

impl IntoIndex for usize {
    fn into_index(self) -> Index {
        Index::At(Expr::Const(self as i64))
    }
}

impl IntoIndex for i32 {
    fn into_index(self) -> Index {
        Index::At(Expr::Const(self as i64))
    }
}

/// The argument of `.at[...]`: one index or a tuple of them.
pub trait IntoIndices {
    /// Converts into the list of indices.
    fn into_indices(self) -> Vec<Index>;
}

impl<T: IntoIndex> IntoIndices for T {
    fn into_indices(self) -> Vec<Index> {
        vec![self.into_index()]
    }
}

impl<A: IntoIndex, B: IntoIndex> IntoIndices for (A, B) {
    fn into_indices(self) -> Vec<Index> {
        vec![self.0.into_index(), self.1.into_index()]
    }
}

impl<A: IntoIndex, B: IntoIndex, C: IntoIndex> IntoIndices for (A, B, C) {
    fn into_indices(self) -> Vec<Index> {
        vec![self.0.into_index(), self.1.into_index(), self.2.into_index()]
    }
}

impl From<Expr> for Dest {
    fn from(e: Expr) -> Dest {
        Dest::Mesh(vec![e])
    }
}

impl From<&Expr> for Dest {
    fn from(e: &Expr) -> Dest {
        Dest::Mesh(vec![e.clone()])
    }
}

impl From<Option<Expr>> for Dest {
    fn from(e: Option<Expr>) -> Dest {
        e.map_or(Dest::Own, |e| Dest::Mesh(vec![e]))
    }
}

impl From<i64> for Dest {
    fn from(e: i64) -> Dest {
        Dest::Mesh(vec![Expr::Const(e)])
    }
}

impl From<&Ref<'_>> for Rhs {
    fn from(r: &Ref<'_>) -> Rhs {
        Rhs::Load(r.r.clone())
    }
}

impl From<Ref<'_>> for Rhs {
    fn from(r: Ref<'_>) -> Rhs {
        Rhs::Load(r.r)
    }
}

impl KernelBuilder {
    fn with<T>(&self, f: impl FnOnce(&mut Draft) -> T) -> T {
        f(&mut self.draft.borrow_mut())
    }

    /// Records a statement, located at the DSL call that made it (the kernel's Rust source).
    #[track_caller]
    fn push(&self, kind: StmtKind) {
        let caller = std::panic::Location::caller();
        let loc = Loc { file: caller.file().to_string(), line: caller.line(), text: None };
        self.with(|d| d.blocks.last_mut().expect("block stack").push(Stmt { kind, loc: Some(loc), implicit: false }));
    }

    fn own(&self, other: &KernelBuilder, what: &str) {
        if other.id != self.id {
            let msg = format!("{what} belongs to another kernel");
            self.with(|d| d.errors.push(msg));
        }
    }

    fn record_block(&self, body: impl FnOnce(&KernelBuilder)) -> Vec<Stmt> {
        self.with(|d| d.blocks.push(Vec::new()));
        body(self);
        self.with(|d| d.blocks.pop().unwrap_or_default())
    }

    /// `grid=(...)`: the grid every device walks, row-major (the launch's, inside
    /// [`KernelBuilder::launch`]).
    pub fn grid(&self, dims: &[usize]) {
        self.with(|d| match &mut d.launch {
            Some(l) => l.grid = dims.to_vec(),
            None => d.kernel.grid = dims.to_vec(),
        });
    }

    /// `CompilerParams(collective_id=id)` (the launch's, inside [`KernelBuilder::launch`]).
    pub fn collective_id(&self, id: u32) {
        self.with(|d| match &mut d.launch {
            Some(l) => l.collective_id = Some(id),
            None => d.kernel.collective_id = Some(id),
        });
    }

    /// `CompilerParams(skip_device_barrier=True)`: no implicit entry barrier (the
    /// launch's, inside [`KernelBuilder::launch`]).
    pub fn skip_device_barrier(&self) {
        self.with(|d| match &mut d.launch {
            Some(l) => l.skip_device_barrier = true,
            None => d.kernel.skip_device_barrier = true,
        });
    }

    /// One `pallas_call` of a *program of several kernels* ([`crate::ir::Launch`]): `body`
    /// traces its kernel (its grid, `collective_id`, scratch and statements); what it
    /// returns (semaphores it hands out, say) is returned. Buffers and semaphores declared
    /// outside every launch are the program's, shared by the launches that use them; a
    /// semaphore declared inside a launch is its own, unless it hands it out
    /// ([`KernelBuilder::hand_out`]) for later launches to take. A kernel traced with
    /// launches is a program: every statement of its body is a launch.
    #[track_caller]
    pub fn launch<'k, R>(&'k self, name: &str, body: impl FnOnce(&'k KernelBuilder) -> R) -> R {
        let nested = self.with(|d| d.launch.replace(LaunchDraft::default()).is_some());
        if nested {
            self.with(|d| d.errors.push(format!("launch `{name}` inside another launch")));
        }
        self.with(|d| d.blocks.push(Vec::new()));
        let out = body(self);
        let stmts = self.with(|d| d.blocks.pop().unwrap_or_default());
        let draft = self.with(|d| d.launch.take()).unwrap_or_default();
        let mut used = Vec::new();
        if let Err(e) = crate::compile::launch::uses(&stmts, &mut used) {
            self.with(|d| d.errors.push(e.message().to_string()));
        }
        let mut semaphores: Vec<SemId> = draft.declared.iter().chain(&used).chain(&draft.hands_out).copied().collect();
        semaphores.sort();
        semaphores.dedup();
        let launch = crate::ir::Launch {
            name: name.to_string(),
            grid: draft.grid,
            collective_id: draft.collective_id,
            skip_device_barrier: draft.skip_device_barrier,
            allow_collective_id_without_custom_barrier: false,
            semaphores,
            hands_out: draft.hands_out,
            body: stmts,
        };
        self.push(StmtKind::Launch(Box::new(launch)));
        out
    }

    /// Inside [`KernelBuilder::launch`]: the launch hands `sem` out (a
    /// `pltpu.SEMAPHORE`-space output), so it lives on after the launch.
    pub fn hand_out(&self, sem: &Sem<'_>) {
        self.own(sem.k, "the semaphore");
        self.with(|d| match &mut d.launch {
            Some(l) => l.hands_out.push(sem.r.sem),
            None => d.errors.push("hand_out outside a launch".into()),
        });
    }

    /// Sets the byte size of each cell for buffers declared after this call.
    pub fn cell_bytes(&self, bytes: u32) {
        self.with(|d| d.cell_bytes = bytes);
    }

    fn declare(&self, name: &str, role: BufferRole, space: MemorySpace, shape: &[usize], shared: bool) -> Ref<'_> {
        let id = self.with(|d| {
            if shape.contains(&0) {
                d.errors.push(format!("buffer `{name}` has a zero-sized dimension in shape {shape:?}"));
            }
            if d.kernel.buffers.iter().any(|b| b.name == name) {
                d.errors.push(format!("buffer `{name}` is declared twice"));
            }
            d.kernel.buffers.push(BufferDecl {
                name: name.to_string(),
                space,
                role,
                shape: shape.to_vec(),
                cell_bytes: d.cell_bytes,
                shared,
                cell_elements: Vec::new(),
            });
            BufferId(d.kernel.buffers.len() as u32 - 1)
        });
        Ref { k: self, r: RefExpr { buffer: id, indexing: Vec::new() } }
    }

    /// An input buffer of this device (`in_specs`), with `shape` in cells.
    pub fn input(&self, name: &str, space: MemorySpace, shape: &[usize]) -> Ref<'_> {
        self.declare(name, BufferRole::Input, space, shape, false)
    }

    /// An output buffer of this device (`out_specs`).
    pub fn output(&self, name: &str, space: MemorySpace, shape: &[usize]) -> Ref<'_> {
        self.declare(name, BufferRole::Output, space, shape, false)
    }

    /// An output aliased to an input (`input_output_aliases`): one buffer, holding the
    /// input at entry and checked as an output at exit.
    pub fn input_output(&self, name: &str, space: MemorySpace, shape: &[usize]) -> Ref<'_> {
        self.declare(name, BufferRole::InputOutput, space, shape, false)
    }

    /// A scratch buffer of this device (`scratch_shapes`).
    pub fn scratch(&self, name: &str, space: MemorySpace, shape: &[usize]) -> Ref<'_> {
        self.declare(name, BufferRole::Scratch, space, shape, false)
    }

    /// An HBM buffer shared by all devices of the mesh (the TensorCores of one chip).
    pub fn shared_hbm(&self, name: &str, role: BufferRole, shape: &[usize]) -> Ref<'_> {
        self.declare(name, role, MemorySpace::Hbm, shape, true)
    }

    fn semaphore(&self, name: &str, kind: SemKind, len: Option<usize>, scoped: bool) -> Sem<'_> {
        let id = self.with(|d| {
            if len == Some(0) {
                d.errors.push(format!("semaphore array `{name}` has length 0"));
            }
            d.kernel.semaphores.push(SemDecl { name: name.to_string(), kind, len, scoped });
            let id = SemId(d.kernel.semaphores.len() as u32 - 1);
            if let Some(l) = &mut d.launch {
                l.declared.push(id);
            }
            id
        });
        Sem { k: self, r: SemRef { sem: id, index: None } }
    }

    /// `pltpu.SemaphoreType.DMA`
    pub fn dma_semaphore(&self, name: &str) -> Sem<'_> {
        self.semaphore(name, SemKind::Dma, None, false)
    }

    /// `pltpu.SemaphoreType.DMA((n,))`
    pub fn dma_semaphores(&self, name: &str, n: usize) -> Sem<'_> {
        self.semaphore(name, SemKind::Dma, Some(n), false)
    }

    /// `pltpu.SemaphoreType.REGULAR`
    pub fn regular_semaphore(&self, name: &str) -> Sem<'_> {
        self.semaphore(name, SemKind::Regular, None, false)
    }

    /// `pltpu.SemaphoreType.REGULAR((n,))`
    pub fn regular_semaphores(&self, name: &str, n: usize) -> Sem<'_> {
        self.semaphore(name, SemKind::Regular, Some(n), false)
    }

    /// `pltpu.get_barrier_semaphore()`: the collective's barrier semaphore.
    pub fn get_barrier_semaphore(&self) -> Sem<'_> {
        // In a program of several kernels, the barrier semaphore of the launch's collective.
        if let Some(cid) = self.with(|d| d.launch.as_ref().map(|l| l.collective_id)) {
            if let Some(id) = self.with(|d| d.barriers.iter().find(|b| b.0 == cid).map(|b| b.1)) {
                self.with(|d| d.launch.as_mut().map(|l| l.declared.push(id)));
                return Sem { k: self, r: SemRef { sem: id, index: None } };
            }
            let sem = self.semaphore("barrier", SemKind::Barrier, None, false);
            self.with(|d| d.barriers.push((cid, sem.r.sem)));
            return sem;
        }
        if let Some(id) = self.with(|d| d.barrier) {
            return Sem { k: self, r: SemRef { sem: id, index: None } };
        }
        let sem = self.semaphore("barrier", SemKind::Barrier, None, false);
        self.with(|d| d.barrier = Some(sem.r.sem));
        sem
    }

    /// `lax.axis_index(name)`
    pub fn axis_index(&self, name: &str) -> Expr {
        Expr::AxisIndex(name.to_string())
    }

    /// The size of a mesh axis (`num_devices` on a ring).
    pub fn axis_size(&self, name: &str) -> Expr {
        Expr::AxisSize(name.to_string())
    }

    /// `pl.program_id(dim)`
    pub fn program_id(&self, dim: usize) -> Expr {
        Expr::ProgramId(dim)
    }

    /// `pl.num_programs(dim)`
    pub fn num_programs(&self, dim: usize) -> Expr {
        Expr::NumPrograms(dim)
    }

    /// A device id by named axes, the other axes being this device's:
    /// `device_id={'tc': 1 - core}`.
    pub fn device(&self, axes: &[(&str, Expr)]) -> Dest {
        Dest::Axes(axes.iter().map(|(a, e)| (a.to_string(), e.clone())).collect())
    }

    /// `device_id=i, device_id_type=DeviceIdType.LOGICAL`: the device with row-major index
    /// `i` in the mesh.
    pub fn logical_device(&self, id: impl Into<Expr>) -> Dest {
        Dest::Logical(id.into())
    }

    /// `lax.fori_loop(0, count, body)` with a static trip count: `body` gets the index,
    /// the loop variable named `var` (unique in the kernel).
    #[track_caller]
    pub fn fori_loop(&self, var: &str, count: u64, body: impl FnOnce(&KernelBuilder, Expr)) {
        let i = Expr::Var(var.to_string());
        let stmts = self.record_block(|k| body(k, i.clone()));
        self.push(StmtKind::Loop {
            vars: vec![var.to_string()],
            init: vec![Expr::Const(0)],
            count: Some(count),
            cond: None,
            next: vec![i + 1i64],
            body: stmts,
        });
    }

    /// `lax.while_loop(cond, body, init)` over integer carries named `vars` (unique in the
    /// kernel): `cond` and `body` get the carries as [`Expr::Var`]s; `body` records the
    /// iteration and returns the next carries. The carries keep their last values after
    /// the loop.
    #[track_caller]
    pub fn while_loop(
        &self,
        vars: &[(&str, Expr)],
        cond: impl FnOnce(&[Expr]) -> Expr,
        body: impl FnOnce(&KernelBuilder, &[Expr]) -> Vec<Expr>,
    ) {
        let names: Vec<String> = vars.iter().map(|(n, _)| n.to_string()).collect();
        let carries: Vec<Expr> = names.iter().map(|n| Expr::Var(n.clone())).collect();
        let c = cond(&carries);
        let mut next = Vec::new();
        let stmts = self.record_block(|k| next = body(k, &carries));
        self.push(StmtKind::Loop {
            init: vars.iter().map(|(_, e)| e.clone()).collect(),
            vars: names,
            count: None,
            cond: Some(c),
            next,
            body: stmts,
        });
    }

    /// `@pl.when(cond)`: `body` runs on the devices and grid indices where `cond` holds.
    #[track_caller]
    pub fn when(&self, cond: impl Into<Expr>, body: impl FnOnce(&KernelBuilder)) {
        let body = self.record_block(body);
        self.push(StmtKind::When { cond: cond.into(), body });
    }

    /// `pl.run_scoped(body, sem=SemaphoreType.<kind>)`: a semaphore allocated for `body`.
    #[track_caller]
    pub fn run_scoped<'k>(&'k self, name: &str, kind: SemKind, body: impl FnOnce(&'k KernelBuilder, Sem<'k>)) {
        let sem = self.semaphore(name, kind, None, true);
        let id = sem.r.sem;
        self.with(|d| d.blocks.push(Vec::new()));
        body(self, sem);
        let body = self.with(|d| d.blocks.pop().unwrap_or_default());
        self.push(StmtKind::Scoped { sems: vec![id], body });
    }

    /// `pltpu.make_async_copy(src, dst, sem)`
    pub fn make_async_copy<'k>(&'k self, src: &Ref<'k>, dst: &Ref<'k>, sem: &Sem<'k>) -> Dma<'k> {
        self.own(src.k, "the source");
        self.own(dst.k, "the destination");
        self.own(sem.k, "the semaphore");
        Dma { k: self, desc: DmaDesc::Local { src: src.r.clone(), dst: dst.r.clone(), sem: sem.r.clone() } }
    }

    /// `pltpu.async_copy(src, dst, sem)`: builds and starts a local copy.
    #[track_caller]
    pub fn async_copy<'k>(&'k self, src: &Ref<'k>, dst: &Ref<'k>, sem: &Sem<'k>) -> Dma<'k> {
        let dma = self.make_async_copy(src, dst, sem);
        dma.start();
        dma
    }

    /// `pltpu.make_async_remote_copy(src, dst, send_sem, recv_sem, device_id)`
    pub fn make_async_remote_copy<'k>(
        &'k self,
        src: &Ref<'k>,
        dst: &Ref<'k>,
        send_sem: &Sem<'k>,
        recv_sem: &Sem<'k>,
        device: impl Into<Dest>,
    ) -> Dma<'k> {
        self.own(src.k, "the source");
        self.own(dst.k, "the destination");
        self.own(send_sem.k, "the send semaphore");
        self.own(recv_sem.k, "the receive semaphore");
        Dma {
            k: self,
            desc: DmaDesc::Remote {
                src: src.r.clone(),
                dst: dst.r.clone(),
                send_sem: send_sem.r.clone(),
                recv_sem: recv_sem.r.clone(),
                device: device.into(),
            },
        }
    }

    /// `pl.semaphore_signal(sem, inc, device_id=device)`; pass `None::<Expr>` or
    /// [`Dest::Own`] for this device.
    #[track_caller]
    pub fn semaphore_signal<'k>(&'k self, sem: &Sem<'k>, inc: impl Into<Expr>, device: impl Into<Dest>) {
        self.own(sem.k, "the semaphore");
        self.push(StmtKind::Signal { sem: sem.r.clone(), inc: inc.into(), device: device.into() });
    }

    /// `pl.semaphore_wait(sem, n)`
    #[track_caller]
    pub fn semaphore_wait<'k>(&'k self, sem: &Sem<'k>, n: impl Into<Expr>) {
        self.own(sem.k, "the semaphore");
        self.push(StmtKind::Wait { sem: sem.r.clone(), amount: n.into() });
    }
}

impl<'k> Ref<'k> {
    /// `.at[...]`: a narrower view (one index or a tuple of indices and `ds` slices).
    pub fn at(&self, indices: impl IntoIndices) -> Ref<'k> {
        let mut r = self.r.clone();
        r.indexing.push(Level::Index(indices.into_indices()));
        Ref { k: self.k, r }
    }

    /// `ref[...] = rhs`
    #[track_caller]
    pub fn assign(&self, rhs: impl Into<Rhs>) {
        let rhs = rhs.into();
        self.k.push(StmtKind::Assign { dst: self.r.clone(), rhs });
    }

    /// An elementwise function of this view, for `assign` (`vmem[...] * 2.0`); `{}` in
    /// `template` stands for the argument.
    pub fn map(&self, template: &str) -> Rhs {
        Rhs::Map { func: template.to_string(), src: self.r.clone() }
    }

    /// The IR of the view.
    pub fn ir(&self) -> &RefExpr {
        &self.r
    }

    /// This view's cells, read, as data for [`Ref::compute`].
    pub fn load(&self) -> Data {
        Data::Load(self.r.clone())
    }

    /// `ref[...] = value` for any value computed from loaded views (`x[...] @ w[...]` is
    /// `Data::apply("dot({}, {})", vec![x.load(), w.load()])` with `cellwise = false`).
    #[track_caller]
    pub fn compute(&self, value: Data, cellwise: bool) {
        self.k.push(StmtKind::Assign { dst: self.r.clone(), rhs: Rhs::Compute { value, cellwise } });
    }
}

impl<'k> AddAssign<&Ref<'k>> for Ref<'k> {
    #[track_caller]
    fn add_assign(&mut self, src: &Ref<'k>) {
        self.k.own(src.k, "the added view");
        self.k.push(StmtKind::AddAssign { dst: self.r.clone(), src: src.r.clone() });
    }
}

impl<'k> AddAssign<Ref<'k>> for Ref<'k> {
    #[track_caller]
    fn add_assign(&mut self, src: Ref<'k>) {
        *self += &src;
    }
}

impl<'k> Sem<'k> {
    /// `.at[i]`: one element of a semaphore array.
    pub fn at(&self, i: impl Into<Expr>) -> Sem<'k> {
        Sem { k: self.k, r: SemRef { sem: self.r.sem, index: Some(i.into()) } }
    }
}

impl Dma<'_> {
    /// `.start()`
    #[track_caller]
    pub fn start(&self) {
        self.k.push(StmtKind::DmaStart(self.desc.clone()));
    }

    /// `.wait()`
    #[track_caller]
    pub fn wait(&self) {
        self.wait_part(WaitPart::All);
    }

    /// `.wait_send()`
    #[track_caller]
    pub fn wait_send(&self) {
        self.wait_part(WaitPart::Send);
    }

    /// `.wait_recv()`
    #[track_caller]
    pub fn wait_recv(&self) {
        self.wait_part(WaitPart::Recv);
    }

    #[track_caller]
    fn wait_part(&self, part: WaitPart) {
        self.k.push(StmtKind::DmaWait { dma: self.desc.clone(), part });
    }
}
