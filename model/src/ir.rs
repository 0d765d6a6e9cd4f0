//! The kernel IR: the contract between front ends (the Rust DSL today, Pallas source
//! later) and the engines.
//!
//! A [`Kernel`] is plain data: declarations of buffers and semaphores, a grid, and a body
//! of statements that every device runs once per grid index. Nothing in it refers to Rust
//! closures; indices, conditions and device ids are [`Expr`]s evaluated per device when the
//! kernel is compiled for a mesh ([`crate::compile()`]).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::expr::Expr;

/// Index of a buffer declaration in [`Kernel::buffers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BufferId(pub u32);

/// Index of a semaphore declaration in [`Kernel::semaphores`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SemId(pub u32);

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemorySpace {
    /// HBM (`pl.ANY`).
    Hbm,
    /// VMEM.
    Vmem,
    /// SMEM.
    Smem,
}

/// The role of a buffer in the `pallas_call`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BufferRole {
    /// An input: holds this device's input atoms at kernel entry.
    Input,
    /// An output: undefined at entry; the specification says what it must hold at exit.
    Output,
    /// Scratch: undefined at entry.
    Scratch,
    /// An output aliased to an input (`input_output_aliases` on HBM): holds the input's
    /// atoms at entry, and the specification says what it must hold at exit.
    InputOutput,
}

impl BufferRole {
    /// Whether the buffer holds input atoms at kernel entry.
    pub fn has_input(self) -> bool {
        matches!(self, BufferRole::Input | BufferRole::InputOutput)
    }

    /// Whether the specification checks the buffer at exit.
    pub fn is_output(self) -> bool {
        matches!(self, BufferRole::Output | BufferRole::InputOutput)
    }
}

/// A buffer declaration. The shape is in cells, the granularity the protocol slices at;
/// each cell stands for `cell_bytes` bytes of the real array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BufferDecl {
    /// The kernel's name for the buffer (`hbm_buf`).
    pub name: String,
    /// Memory space.
    pub space: MemorySpace,
    /// Role.
    pub role: BufferRole,
    /// Shape in cells; empty for a buffer that is a single cell.
    pub shape: Vec<usize>,
    /// Bytes per cell, used for DMA sizes and semaphore amounts.
    pub cell_bytes: u32,
    /// One instance shared by every device (two TensorCores sharing HBM) instead of one
    /// per device.
    pub shared: bool,
    /// Elements of the real array per cell, along each dimension of `shape` (a kernel read
    /// from a file; empty when the cells are the kernel's own units, as in the DSL): error
    /// messages give positions in elements too.
    #[serde(default)]
    pub cell_elements: Vec<usize>,
}

impl BufferDecl {
    /// The number of cells.
    pub fn num_cells(&self) -> usize {
        self.shape.iter().product()
    }
}

/// A semaphore kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SemKind {
    /// `SemaphoreType.DMA`: counts bytes of completed DMAs.
    Dma,
    /// `SemaphoreType.REGULAR`: signalled and waited explicitly.
    Regular,
    /// The barrier semaphore of the `collective_id`: persists across invocations.
    Barrier,
}

impl fmt::Display for SemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SemKind::Dma => "DMA",
            SemKind::Regular => "REGULAR",
            SemKind::Barrier => "BARRIER",
        })
    }
}

/// A semaphore declaration: a scalar or an array (`SemaphoreType.DMA((n,))`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SemDecl {
    /// The kernel's name (`capacity_sem`).
    pub name: String,
    /// Kind.
    pub kind: SemKind,
    /// `Some(n)` for an array of `n` semaphores.
    pub len: Option<usize>,
    /// Allocated by `pl.run_scoped`.
    pub scoped: bool,
}

/// One index of a `.at[...]`: a single position (the dimension is dropped) or a
/// `pl.ds(start, size, step)` slice (the dimension is kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Index {
    /// `.at[i]`
    At(Expr),
    /// `.at[pl.ds(start, size, step)]`
    Slice {
        /// First position.
        start: Expr,
        /// Number of positions: a constant, or (a DMA's view) computed from indices like
        /// `start`; 0 copies nothing.
        size: Expr,
        /// Distance between consecutive positions (`pl.ds`'s `stride`), at least 1.
        #[serde(default = "unit_step", skip_serializing_if = "is_unit_step")]
        step: usize,
    },
}

fn unit_step() -> usize {
    1
}

fn is_unit_step(step: &usize) -> bool {
    *step == 1
}

/// One application to a view, outermost first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Level {
    /// `.at[...]`: its indices, applied to the view's leading dimensions.
    Index(Vec<Index>),
    /// `.reshape(shape)`: the view read in row-major order with another shape (the
    /// product of the sizes unchanged; merged dimensions must be contiguous).
    Reshape(Vec<usize>),
}

/// A view of a buffer: the buffer and what is applied to it, outermost first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RefExpr {
    /// The buffer.
    pub buffer: BufferId,
    /// Each `.at[...]` or `.reshape(...)`, applied to the view so far.
    pub indexing: Vec<Level>,
}

/// A semaphore, or one element of a semaphore array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SemRef {
    /// The declaration.
    pub sem: SemId,
    /// The element of an array (`.at[i]`); `None` for a scalar semaphore.
    pub index: Option<Expr>,
}

/// The device a remote operation targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Dest {
    /// This device (`device_id` absent).
    Own,
    /// Mesh coordinates, one per axis: `device_id=(target,)`.
    Mesh(Vec<Expr>),
    /// Named axes, the rest taken from this device: `device_id={'tc': 1 - core}`.
    Axes(Vec<(String, Expr)>),
    /// `device_id_type=DeviceIdType.LOGICAL`: the device's row-major index in the mesh.
    Logical(Expr),
}

/// A DMA descriptor built by `make_async_copy` or `make_async_remote_copy`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DmaDesc {
    /// A copy within this device (or its shared HBM).
    Local {
        /// Source view.
        src: RefExpr,
        /// Destination view.
        dst: RefExpr,
        /// Semaphore incremented by the copy's byte count when it is done.
        sem: SemRef,
    },
    /// A copy from this device into another device's memory.
    Remote {
        /// Source view, on this device.
        src: RefExpr,
        /// Destination view, resolved on the target device.
        dst: RefExpr,
        /// Semaphore on this device, incremented when the source has been read.
        send_sem: SemRef,
        /// Semaphore on the target device, incremented when the data has arrived.
        recv_sem: SemRef,
        /// The target device.
        device: Dest,
    },
}

/// Which half of a DMA wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WaitPart {
    /// `.wait()`: `wait_send` then `wait_recv` for a remote copy; the one semaphore for a local copy.
    All,
    /// `.wait_send()`
    Send,
    /// `.wait_recv()`
    Recv,
}

/// Data computed from loaded views: the value of a store (`dst[...] = x[...] @ w[...]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Data {
    /// `jnp.zeros_like(...)`: the empty sum.
    Zeros,
    /// The cells of a view, read.
    Load(RefExpr),
    /// `a + b`: the symbolic sum (multiset union) of two values.
    Add(Box<Data>, Box<Data>),
    /// An uninterpreted function of its arguments (`2*{}`, `dot_general({}, {})`,
    /// `float32({})`); arguments are kept apart, in order.
    Apply {
        /// The function's name, a template with one `{}` per argument.
        func: String,
        /// The arguments.
        args: Vec<Data>,
    },
    /// A constant array without input contributions (`jnp.full(..., 1.0)`), by name.
    Const(String),
    /// An index value used as data (`x * program_id`), evaluated per device.
    Index(Expr),
}

impl Data {
    /// `src[...]`, read.
    pub fn load(src: &RefExpr) -> Data {
        Data::Load(src.clone())
    }

    /// `func(args...)`, uninterpreted.
    pub fn apply(func: &str, args: Vec<Data>) -> Data {
        Data::Apply { func: func.to_string(), args }
    }

    /// The views this value reads, in order.
    pub fn loads(&self) -> Vec<&RefExpr> {
        let mut out = Vec::new();
        fn walk<'d>(d: &'d Data, out: &mut Vec<&'d RefExpr>) {
            match d {
                Data::Load(r) => out.push(r),
                Data::Add(a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Data::Apply { args, .. } => args.iter().for_each(|a| walk(a, out)),
                Data::Zeros | Data::Const(_) | Data::Index(_) => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

/// The right-hand side of a local store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Rhs {
    /// `jnp.zeros_like(...)`: the empty sum.
    Zeros,
    /// A copy of another view.
    Load(RefExpr),
    /// An uninterpreted elementwise function of another view (`vmem * 2.0`), named by a
    /// template in which `{}` stands for the argument.
    Map {
        /// The template, e.g. `2*{}`.
        func: String,
        /// The argument.
        src: RefExpr,
    },
    /// Any value computed from loaded views. `cellwise`: each destination cell is
    /// computed from the same cell of every view read (elementwise code; every view has
    /// the destination's cell count); otherwise each destination cell is a function of
    /// *every* cell read (`jnp.dot`, reductions, broadcasts), tagged with its position.
    Compute {
        /// The value.
        value: Data,
        /// Cell by cell, or every cell read.
        cellwise: bool,
    },
}

/// Where a statement comes from in the kernel's source: `psum.py:57 remote.start()`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Loc {
    /// The source file, as the front end names it (a path, or a crate-relative path for
    /// DSL kernels).
    pub file: String,
    /// The 1-based line.
    pub line: u32,
    /// The text of the line, trimmed, when the front end knows it (the Python front end
    /// does; DSL locations have none). Operations of statements whose location has a text
    /// carry the location in their labels, so every counterexample event names its line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Loc {
    /// The file's last path component: `psum.py`.
    pub fn file_name(&self) -> &str {
        self.file.rsplit(['/', '\\']).next().unwrap_or(&self.file)
    }
}

impl fmt::Display for Loc {
    /// `psum.py:57` followed by the line's text when known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file_name(), self.line)?;
        if let Some(t) = &self.text {
            write!(f, " {t}")?;
        }
        Ok(())
    }
}

/// The pre-order number of a statement in its kernel (see [`Kernel::statements`]): the
/// identity coverage and mutation reports use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StmtId(pub u32);

/// A statement of the kernel body, with where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stmt {
    /// What the statement does.
    pub kind: StmtKind,
    /// Its source location, when the front end knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loc: Option<Loc>,
    /// Pallas's own statement rather than the kernel author's (the copies of blocks
    /// Pallas pipelines around a grid): `mutate` does not edit it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implicit: bool,
}

impl Stmt {
    /// A statement without a source location.
    pub fn new(kind: StmtKind) -> Stmt {
        Stmt { kind, loc: None, implicit: false }
    }

    /// The statements nested directly in this one (a `when`, scope or loop body).
    pub fn children(&self) -> &[Stmt] {
        match &self.kind {
            StmtKind::When { body, .. } | StmtKind::Scoped { body, .. } | StmtKind::Loop { body, .. } => body,
            StmtKind::Launch(launch) => &launch.body,
            _ => &[],
        }
    }

    /// The nested statements, to edit them (see [`Stmt::children`]).
    pub fn children_mut(&mut self) -> Option<&mut Vec<Stmt>> {
        match &mut self.kind {
            StmtKind::When { body, .. } | StmtKind::Scoped { body, .. } | StmtKind::Loop { body, .. } => Some(body),
            StmtKind::Launch(launch) => Some(&mut launch.body),
            _ => None,
        }
    }

    /// The number of statements in this one's subtree, itself included.
    pub fn subtree_len(&self) -> u32 {
        1 + self.children().iter().map(Stmt::subtree_len).sum::<u32>()
    }
}

impl From<StmtKind> for Stmt {
    fn from(kind: StmtKind) -> Stmt {
        Stmt::new(kind)
    }
}

/// What a statement of the kernel body does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StmtKind {
    /// `@pl.when(cond)`: run the body when `cond` is non-zero.
    When {
        /// The condition.
        cond: Expr,
        /// The guarded statements.
        body: Vec<Stmt>,
    },
    /// `lax.fori_loop` / `lax.while_loop`: `vars := init`; then, while fewer than `count`
    /// iterations ran (if given) and `cond` holds (if given), run `body` and set
    /// `vars := next` (all at once, from the old values). The variables ([`Expr::Var`])
    /// keep their last values after the loop: a loop's results are its variables.
    Loop {
        /// The loop variables (the integer carries; a `fori_loop`'s index among them).
        vars: Vec<String>,
        /// Their initial values.
        init: Vec<Expr>,
        /// A static trip count (`fori_loop` with static bounds), if any.
        count: Option<u64>,
        /// The condition checked before every iteration (`while_loop`), if any.
        cond: Option<Expr>,
        /// The variables' values for the next iteration.
        next: Vec<Expr>,
        /// The statements of one iteration.
        body: Vec<Stmt>,
    },
    /// `pl.run_scoped`: the body with semaphores (and scratch buffers) allocated for it.
    Scoped {
        /// The scoped semaphores.
        sems: Vec<SemId>,
        /// The statements of the scope.
        body: Vec<Stmt>,
    },
    /// One kernel of a program of several kernels (see [`Launch`]): only at the top of a
    /// [`Kernel`]'s body, every statement of which is then a launch.
    Launch(Box<Launch>),
    /// `desc.start()`
    DmaStart(DmaDesc),
    /// `desc.wait()`, `desc.wait_send()` or `desc.wait_recv()`.
    DmaWait {
        /// The descriptor (its semaphores and size).
        dma: DmaDesc,
        /// Which wait.
        part: WaitPart,
    },
    /// `pl.semaphore_signal(sem, inc, device_id)`
    Signal {
        /// The semaphore, resolved on the target.
        sem: SemRef,
        /// The increment.
        inc: Expr,
        /// The target device.
        device: Dest,
    },
    /// `pl.semaphore_wait(sem, n)`
    Wait {
        /// The semaphore on this device.
        sem: SemRef,
        /// The amount.
        amount: Expr,
    },
    /// `dst[...] = rhs`
    Assign {
        /// Destination view.
        dst: RefExpr,
        /// Value.
        rhs: Rhs,
    },
    /// `dst[...] += src[...]`
    AddAssign {
        /// Destination view (read and written).
        dst: RefExpr,
        /// Source view.
        src: RefExpr,
    },
    /// `var = ref[index]` on an SMEM array of integers the kernel uses as its own scalar
    /// state ([`ScalarDecl`]): read when the program is compiled, like `axis_index`, since
    /// only the device's own program writes it. `var` is then an [`Expr::Var`].
    ScalarLoad {
        /// The variable that holds the value from here on.
        var: String,
        /// The scalar array.
        scalar: usize,
        /// The flat (row-major) element index.
        index: Expr,
    },
    /// `ref[index] = value` on an SMEM array of integers ([`StmtKind::ScalarLoad`]).
    ScalarStore {
        /// The scalar array.
        scalar: usize,
        /// The flat (row-major) element index.
        index: Expr,
        /// The value.
        value: Expr,
    },
    /// The elements `dst` of scalar array `scalar` take the values of the elements `src`
    /// of scalar array `source`, in order: what a copy of known integers into SMEM scalar
    /// state brings (an index window; the copy itself is a DMA statement of its own).
    ScalarCopy {
        /// The scalar array written.
        scalar: usize,
        /// Its elements written.
        dst: ScalarRange,
        /// The scalar array read.
        source: usize,
        /// Its elements read (as many as `dst`).
        src: ScalarRange,
    },
}

/// One kernel (one `pallas_call`) of a *program of several kernels*: kernels of one jitted
/// program that hand semaphores (`pltpu.SEMAPHORE`-space operands), and so DMAs still in
/// flight, from one to the next. A [`Kernel`] whose body is a sequence of launches is
/// such a program: every device runs the launches in order, each entered and exited like
/// a kernel of its own (JAX's entry barrier and `collective_id` rules apply per launch),
/// while the program's buffers and semaphores (its declarations) keep their contents from
/// one launch to the next. See [`crate::semantics::CHOICES`] (`programs-of-kernels`) for
/// what is carried and when the exit rules apply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    /// The kernel's name (`recv_done_kernel`), in every label and message.
    pub name: String,
    /// Its grid.
    pub grid: Vec<usize>,
    /// Its `CompilerParams(collective_id=...)`.
    pub collective_id: Option<u32>,
    /// Its `CompilerParams(skip_device_barrier=True)`.
    #[serde(default)]
    pub skip_device_barrier: bool,
    /// Its `CompilerParams(allow_collective_id_without_custom_barrier=True)`.
    #[serde(default)]
    pub allow_collective_id_without_custom_barrier: bool,
    /// The semaphores it takes: its semaphore operands (inputs and outputs), scratch,
    /// scoped and barrier semaphores. Its body uses no other.
    pub semaphores: Vec<SemId>,
    /// Among them, those it hands out (its `pltpu.SEMAPHORE`-space outputs): such a
    /// semaphore lives on after the kernel, until the last later launch that takes it
    /// exits, or to the end of the program when none does.
    #[serde(default)]
    pub hands_out: Vec<SemId>,
    /// The body, run once per grid index.
    pub body: Vec<Stmt>,
}

impl Launch {
    /// Whether the launch talks to another device (a remote copy, or a signal with a
    /// `device_id`, in any branch): Mosaic's `has_communication`.
    pub fn communicates(&self) -> bool {
        fn any(body: &[Stmt]) -> bool {
            body.iter().any(|s| {
                matches!(
                    &s.kind,
                    StmtKind::DmaStart(DmaDesc::Remote { .. })
                        | StmtKind::Signal { device: Dest::Mesh(_) | Dest::Axes(_) | Dest::Logical(_), .. }
                ) || any(s.children())
            })
        }
        any(&self.body)
    }

    /// Whether it takes the barrier semaphore (JAX's "custom barrier").
    pub fn has_custom_barrier(&self, kernel: &Kernel) -> bool {
        self.semaphores.iter().any(|&s| kernel.semaphore(s).is_some_and(|d| d.kind == SemKind::Barrier))
    }

    /// Whether JAX inserts its entry barrier: the launch communicates, has no custom
    /// barrier and does not set `skip_device_barrier` (as [`Kernel::implicit_entry_barrier`]).
    pub fn implicit_entry_barrier(&self, kernel: &Kernel) -> bool {
        self.communicates() && !self.has_custom_barrier(kernel) && !self.skip_device_barrier
    }
}

/// A strided block of elements of a scalar array: for every `i` with `i[k] < dims[k].0`,
/// row-major, the flat element `start + sum of i[k] * dims[k].1`; with a `count`, only
/// the first `count` of those.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalarRange {
    /// The flat index of the first element.
    pub start: Expr,
    /// Per dimension, its size and its stride in elements (with a `count`: the most).
    pub dims: Vec<(usize, i64)>,
    /// How many of the elements `dims` gives are in the range, when that is computed (a
    /// copy of dynamic size into an index window); `None`: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Expr>,
}

impl ScalarRange {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.dims.iter().map(|d| d.0).product()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offsets from `start` of its elements, in order.
    pub fn offsets(&self) -> Vec<i64> {
        let mut out = vec![0i64];
        for &(size, stride) in &self.dims {
            out = out.iter().flat_map(|&o| (0..size as i64).map(move |i| o + i * stride)).collect();
        }
        out
    }
}

/// An SMEM array of integers the kernel uses as its own scalar state (indices, flags,
/// counts): never copied by a DMA, written only by integer stores of the device's own
/// program, so its contents at every statement are known when the program is compiled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalarDecl {
    /// The kernel's name for the array.
    pub name: String,
    /// The number of elements.
    pub len: usize,
    /// The contents at kernel entry on each device that has them (a scalar-prefetch
    /// operand: the values the caller passed); unwritten elements of the others are
    /// undefined, and reading one is an error.
    #[serde(default)]
    pub init: Vec<ScalarInit>,
}

/// The entry contents of a [`ScalarDecl`] on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScalarInit {
    /// The device's mesh coordinates.
    pub coords: Vec<usize>,
    /// The elements, row-major.
    pub values: Vec<i64>,
}

/// A traced kernel: what one `pallas_call` runs on every device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The kernel's name, used in every error message.
    pub name: String,
    /// The grid; each device walks it in row-major order.
    pub grid: Vec<usize>,
    /// Buffer declarations, indexed by [`BufferId`].
    pub buffers: Vec<BufferDecl>,
    /// Semaphore declarations, indexed by [`SemId`].
    pub semaphores: Vec<SemDecl>,
    /// SMEM scalar state ([`ScalarDecl`]), indexed by the `scalar` of
    /// [`StmtKind::ScalarLoad`], [`StmtKind::ScalarStore`] and [`StmtKind::ScalarCopy`].
    #[serde(default)]
    pub scalars: Vec<ScalarDecl>,
    /// `CompilerParams(collective_id=...)`: required when the kernel takes the barrier
    /// semaphore, refused otherwise (JAX's build rule).
    pub collective_id: Option<u32>,
    /// `CompilerParams(skip_device_barrier=True)`: no implicit entry barrier even though
    /// the kernel communicates and has no barrier of its own.
    #[serde(default)]
    pub skip_device_barrier: bool,
    /// `CompilerParams(allow_collective_id_without_custom_barrier=True)`.
    #[serde(default)]
    pub allow_collective_id_without_custom_barrier: bool,
    /// The body.
    pub body: Vec<Stmt>,
}

impl Kernel {
    /// The buffer declaration, if the id exists.
    pub fn buffer(&self, id: BufferId) -> Option<&BufferDecl> {
        self.buffers.get(id.0 as usize)
    }

    /// The semaphore declaration, if the id exists.
    pub fn semaphore(&self, id: SemId) -> Option<&SemDecl> {
        self.semaphores.get(id.0 as usize)
    }

    /// Whether the kernel takes the barrier semaphore (`pltpu.get_barrier_semaphore()`):
    /// JAX's "custom barrier".
    pub fn has_custom_barrier(&self) -> bool {
        self.semaphores.iter().any(|s| s.kind == SemKind::Barrier)
    }

    /// Whether any statement, in any branch, talks to another device: a remote copy or a
    /// signal with a `device_id` (what Mosaic calls communication).
    pub fn communicates(&self) -> bool {
        self.statements().iter().any(|(_, s)| match &s.kind {
            StmtKind::DmaStart(DmaDesc::Remote { .. }) => true,
            StmtKind::Signal { device, .. } => !matches!(device, Dest::Own),
            _ => false,
        })
    }

    /// Whether devices wait for each other at entry: JAX inserts this barrier exactly when
    /// the kernel communicates, has no custom barrier and does not set
    /// `skip_device_barrier`.
    pub fn implicit_entry_barrier(&self) -> bool {
        self.communicates() && !self.has_custom_barrier() && !self.skip_device_barrier
    }

    /// The launches of a program of several kernels, in order (see [`Launch`]); empty for
    /// a kernel that is not one.
    pub fn launches(&self) -> Vec<&Launch> {
        self.body
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Launch(l) => Some(&**l),
                _ => None,
            })
            .collect()
    }

    /// Whether the kernel is a program of several kernels: its body is launches.
    pub fn is_program(&self) -> bool {
        self.body.iter().any(|s| matches!(s.kind, StmtKind::Launch(_)))
    }

    /// Every statement of the body in pre-order (a `when` or scope before its body), with
    /// its [`StmtId`]: the numbering compiled operations refer to.
    pub fn statements(&self) -> Vec<(StmtId, &Stmt)> {
        fn walk<'k>(body: &'k [Stmt], out: &mut Vec<(StmtId, &'k Stmt)>) {
            for s in body {
                out.push((StmtId(out.len() as u32), s));
                walk(s.children(), out);
            }
        }
        let mut out = Vec::new();
        walk(&self.body, &mut out);
        out
    }

    /// The statement with this id.
    pub fn statement(&self, id: StmtId) -> Option<&Stmt> {
        self.statements().get(id.0 as usize).map(|(_, s)| *s)
    }
}
