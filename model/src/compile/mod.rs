//! Compiling a [`Kernel`] for a mesh into per-device straight-line [`Program`]s, with
//! every check that needs the mesh: indices in range, sizes that match, device ids on the
//! mesh, semaphores of the right kind.
//!
//! This module walks the kernel's statements per device, grid index and invocation;
//! `cells` turns views into cells and names them, `compute` compiles stores of
//! computed data, `dma` DMA starts and waits, semaphores and destinations, and
//! `expect` what the program is checked against.

mod cells;
mod compute;
mod dma;
mod expect;
pub(crate) mod launch;

use crate::error::{ErrorKind, ModelError};
use crate::expr::{EvalEnv, Expr};
use crate::formula::Formula;
use crate::ir::{Kernel, MemorySpace, RefExpr, Rhs, ScalarRange, SemKind, Stmt, StmtId, StmtKind};
use crate::mesh::{DeviceId, Mesh};
use crate::program::{CellId, CellInfo, ComputeKind, DeviceProgram, Op, OpInfo, Program};
use crate::semantics::Semantics;
use crate::spec::Spec;
use crate::value::{Atom, ValueId, ValueTable};

/// The largest pc a packed state can hold.
pub const MAX_OPS_PER_DEVICE: usize = 1 << 18;

/// The most iterations one loop may run on one device at one grid index.
pub const MAX_LOOP_ITERATIONS: u64 = 1 << 20;

/// The most operations compiled over all devices (a mesh far beyond what can be explored
/// is rejected before it takes the machine's memory).
pub const MAX_OPS_TOTAL: usize = 16_000_000;

/// The most buffer cells, and the most semaphores, a compiled program may hold over all
/// devices: a declaration far beyond what can be explored (a semaphore array of 2^31
/// elements, a buffer of 2^40 cells) is refused before it takes the machine's memory.
pub const MAX_CELLS_TOTAL: usize = 16_000_000;

/// Compiles `kernel` for `mesh`, `repeat` back-to-back invocations, checked against `spec`.
pub fn compile(kernel: &Kernel, mesh: &Mesh, spec: &Spec, repeat: u32) -> Result<Program, ModelError> {
    let name = format!("kernel {}", kernel.name);
    validate_declarations(kernel).map_err(|e| e.context(&name))?;
    if repeat == 0 {
        return Err(ModelError::new(ErrorKind::BadDeclaration, format!("{name}: repeat must be at least 1")));
    }
    let mut c = Compiler::new(kernel, mesh)?;
    c.fill_initial_values();
    let mut devices = Vec::with_capacity(mesh.num_devices());
    for d in mesh.devices() {
        devices.push(c.device_program(d, repeat)?);
        // Devices run the same kernel, so device 0 tells what the whole mesh will cost.
        let estimate = devices[0].ops.len().saturating_mul(mesh.num_devices());
        if d.0 == 0 && estimate > MAX_OPS_TOTAL {
            return Err(ModelError::new(
                ErrorKind::TooLarge,
                format!(
                    "{name}: about {estimate} operations over the {} devices of the mesh, more than the {MAX_OPS_TOTAL} semcheck compiles; use fewer devices",
                    mesh.num_devices()
                ),
            ));
        }
    }
    let (per_device, shared) = expect::expectations(kernel, &c.base, &mut c.values, spec, mesh)?;
    for (dp, exp) in devices.iter_mut().zip(per_device) {
        dp.expected = exp;
    }
    let accesses = c.accesses(&devices);
    let mut program = Program {
        kernel: kernel.name.clone(),
        ir: std::sync::Arc::new(kernel.clone()),
        semantics: Semantics::default(),
        mesh: mesh.clone(),
        repeat,
        buffers: kernel.buffers.clone(),
        sem_decls: c.sem_decls,
        sems_per_device: c.sems_per_device,
        devices,
        cells: c.cells,
        cell_pool: c.pool,
        initial_cells: c.initial,
        shared_expected: shared,
        values: c.values,
        spec: spec.clone(),
        accesses,
        dependencies: Default::default(),
        cell_slots: Default::default(),
        formulas: c.formulas,
        kernels: launch::kernel_names(kernel),
        sem_last: launch::semaphore_lifetimes(kernel, &c.sem_base, c.sems_per_device),
    };
    program.dependencies = crate::reduction::Dependencies::build(&program);
    Ok(program)
}

/// `program` (compiled against an empty specification) checked against `spec` instead:
/// the program [`compile`] makes with `spec`, without compiling the kernel again (the
/// lock-step reference is read from a compiled program, then set on it).
pub fn with_spec(mut program: Program, spec: &Spec) -> Result<Program, ModelError> {
    let n = program.mesh.num_devices();
    // The first cell of each buffer, per device (a shared buffer's on every device): the
    // cells visited last to first, the first one written last.
    let mut base = vec![vec![0u32; program.buffers.len()]; n];
    for (c, info) in program.cells.iter().enumerate().rev() {
        let owners = match info.owner {
            Some(d) => d.index()..d.index() + 1,
            None => 0..n,
        };
        for row in &mut base[owners] {
            row[info.buffer] = c as u32;
        }
    }
    let (per_device, shared) = expect::expectations(&program.ir, &base, &mut program.values, spec, &program.mesh)?;
    for (dp, exp) in program.devices.iter_mut().zip(per_device) {
        dp.expected = exp;
    }
    program.shared_expected = shared;
    program.spec = spec.clone();
    Ok(program)
}

/// The input atom of cell `index` of device `origin`'s input buffer number `input` (its
/// [`input_ordinal`]) of cell shape `shape`: `(origin, block, part)`, `block` the first
/// index and `part` the second for ranks up to 2 (the seeds' `x_ref[block, half]`); for
/// higher ranks `part` is the last index and `block` the others flattened row-major, so
/// distinct cells, of one input or of two, hold distinct atoms.
pub fn input_atom(input: u16, origin: u16, index: &[usize], shape: &[usize]) -> Atom {
    match index {
        [] => Atom { origin, block: 0, part: 0, input },
        [i] => Atom { origin, block: *i as u16, part: 0, input },
        [rest @ .., last] => {
            let block = rest.iter().zip(shape).fold(0usize, |acc, (&i, &s)| acc * s + i);
            Atom { origin, block: block as u16, part: *last as u16, input }
        }
    }
}

/// Which input buffer `buffer` is, counting the kernel's input buffers in declaration
/// order ([`Atom::input`]); `None` for a buffer that is not an input.
pub fn input_ordinal(kernel: &Kernel, buffer: usize) -> Option<u16> {
    let buffers = &kernel.buffers;
    buffers[buffer].role.has_input().then(|| buffers[..buffer].iter().filter(|b| b.role.has_input()).count() as u16)
}

/// JAX's build rules for `collective_id` (`jax/_src/tpu_custom_call.py`), with JAX's own
/// wording: a kernel JAX refuses to build is refused here too.
fn validate_declarations(kernel: &Kernel) -> Result<(), ModelError> {
    if kernel.is_program() {
        crate::compile::launch::validate(kernel)?;
    } else {
        build_rules(
            kernel.has_custom_barrier(),
            kernel.collective_id,
            kernel.allow_collective_id_without_custom_barrier,
        )?;
    }
    for b in &kernel.buffers {
        if b.shape.contains(&0) {
            return Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!("buffer `{}` has a zero-sized dimension", b.name),
            ));
        }
        if b.cell_bytes == 0 {
            return Err(ModelError::new(ErrorKind::BadDeclaration, format!("buffer `{}` has 0-byte cells", b.name)));
        }
    }
    validate_accesses(kernel)?;
    if kernel.grid.contains(&0) {
        return Err(ModelError::new(
            ErrorKind::BadDeclaration,
            format!("grid {:?} has a zero-sized dimension", kernel.grid),
        ));
    }
    Ok(())
}

/// JAX's two rules for `collective_id`, for a kernel that does (`custom`) or does not
/// take the barrier semaphore.
pub(crate) fn build_rules(custom: bool, collective_id: Option<u32>, allow: bool) -> Result<(), ModelError> {
    if custom && collective_id.is_none() {
        return Err(ModelError::new(
            ErrorKind::JaxRefuses,
            "collective_id has to be specified when using a custom barrier (get_barrier_semaphore() needs CompilerParams(collective_id=...))",
        ));
    }
    if !custom && collective_id.is_some() && !allow {
        return Err(ModelError::new(
            ErrorKind::JaxRefuses,
            "collective_id has to be unspecified or None when not using a custom barrier (JAX refuses to build this kernel; drop collective_id, or set allow_collective_id_without_custom_barrier)",
        ));
    }
    Ok(())
}

/// Mosaic's rule for loads and stores (`jax/_src/pallas/mosaic/lowering.py`, with its
/// wording): a kernel reads and writes only VMEM and SMEM refs in place; an HBM (or `ANY`)
/// ref is reached by DMAs alone. The copies Pallas's own pipeline makes around grid steps
/// ([`Stmt::implicit`]) are its own and exempt.
fn validate_accesses(kernel: &Kernel) -> Result<(), ModelError> {
    let in_hbm = |r: &RefExpr| kernel.buffer(r.buffer).filter(|b| b.space == MemorySpace::Hbm).map(|b| b.name.as_str());
    for (_, stmt) in kernel.statements() {
        let (dst, srcs): (&RefExpr, Vec<&RefExpr>) = match &stmt.kind {
            _ if stmt.implicit => continue,
            StmtKind::Assign { dst, rhs } => (
                dst,
                match rhs {
                    Rhs::Zeros => vec![],
                    Rhs::Load(src) | Rhs::Map { src, .. } => vec![src],
                    Rhs::Compute { value, .. } => value.loads(),
                },
            ),
            StmtKind::AddAssign { dst, src } => (dst, vec![dst, src]),
            _ => continue,
        };
        let (rule, name) = match (in_hbm(dst), srcs.into_iter().find_map(in_hbm)) {
            (Some(name), _) => ("Loads and stores are only allowed on VMEM and SMEM references.", name),
            (None, Some(name)) => ("Loads are only allowed on VMEM and SMEM references.", name),
            (None, None) => continue,
        };
        let at = stmt.loc.as_ref().map(|l| format!("{}:{}: ", l.file_name(), l.line)).unwrap_or_default();
        let code = stmt.loc.as_ref().and_then(|l| l.text.as_ref()).map(|t| format!("\n    {t}")).unwrap_or_default();
        return Err(ModelError::new(
            ErrorKind::JaxRefuses,
            format!(
                "JAX refuses to build it: {at}{rule} (`{name}` is in HBM or ANY memory, which a kernel reaches \
                 only by DMAs: copy the block into VMEM first){code}"
            ),
        ));
    }
    Ok(())
}

struct Compiler<'a> {
    kernel: &'a Kernel,
    /// The name of the kernel being compiled, for messages: the launch's in a program of
    /// several kernels.
    name: String,
    mesh: &'a Mesh,
    /// `base[device][buffer]`, or the shared base for shared buffers.
    base: Vec<Vec<u32>>,
    cells: Vec<CellInfo>,
    initial: Vec<ValueId>,
    pool: Vec<CellId>,
    values: ValueTable,
    sem_decls: Vec<(crate::ir::SemDecl, Option<usize>)>,
    sem_base: Vec<usize>,
    sems_per_device: usize,
    ops_total: usize,
    formulas: Vec<Formula>,
    /// The index of each formula in `formulas`: equal formulas (the same computation on
    /// every device) share one, so a rotation maps a device's computation onto the next's.
    formula_ids: rustc_hash::FxHashMap<Formula, u32>,
}

/// Refuses a kernel whose buffers or semaphores, over `devices` devices, exceed
/// [`MAX_CELLS_TOTAL`] (counted without overflowing, before anything is allocated).
fn check_sizes(kernel: &Kernel, devices: usize) -> Result<(), ModelError> {
    let too_large = |what: &str| {
        ModelError::new(
            ErrorKind::TooLarge,
            format!(
                "kernel {}: its {what} over {devices} devices exceed the {MAX_CELLS_TOTAL} a program may hold",
                kernel.name
            ),
        )
    };
    let cells = kernel.buffers.iter().try_fold(0usize, |total, b| {
        let n = b.shape.iter().try_fold(1usize, |p, &d| p.checked_mul(d))?;
        total.checked_add(if b.shared { n } else { n.checked_mul(devices)? })
    });
    if cells.is_none_or(|n| n > MAX_CELLS_TOTAL) {
        return Err(too_large("buffers' cells"));
    }
    let sems = kernel.semaphores.iter().try_fold(0usize, |total, s| total.checked_add(s.len.unwrap_or(1)));
    if sems.and_then(|n| n.checked_mul(devices)).is_none_or(|n| n > MAX_CELLS_TOTAL) {
        return Err(too_large("semaphores"));
    }
    Ok(())
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (i, s) in shape.iter().enumerate().rev() {
        idx[i] = flat % s;
        flat /= s;
    }
    idx
}

impl<'a> Compiler<'a> {
    fn new(kernel: &'a Kernel, mesh: &'a Mesh) -> Result<Self, ModelError> {
        check_sizes(kernel, mesh.num_devices())?;
        let mut cells = Vec::new();
        let mut base = vec![vec![0u32; kernel.buffers.len()]; mesh.num_devices()];
        let add = |owner: Option<DeviceId>, b: usize, cells: &mut Vec<CellInfo>| {
            let start = cells.len() as u32;
            for flat in 0..kernel.buffers[b].num_cells() {
                cells.push(CellInfo { owner, buffer: b, index: unravel(flat, &kernel.buffers[b].shape) });
            }
            start
        };
        for d in mesh.devices() {
            for (b, decl) in kernel.buffers.iter().enumerate() {
                if !decl.shared {
                    base[d.index()][b] = add(Some(d), b, &mut cells);
                }
            }
        }
        for (b, decl) in kernel.buffers.iter().enumerate() {
            if decl.shared {
                let start = add(None, b, &mut cells);
                for row in base.iter_mut() {
                    row[b] = start;
                }
            }
        }
        if cells.len() > u32::MAX as usize / 2 {
            return Err(ModelError::new(ErrorKind::TooLarge, format!("kernel {}: too many cells", kernel.name)));
        }
        let mut sem_decls = Vec::new();
        let mut sem_base = Vec::new();
        for s in &kernel.semaphores {
            sem_base.push(sem_decls.len());
            match s.len {
                None => sem_decls.push((s.clone(), None)),
                Some(n) => sem_decls.extend((0..n).map(|i| (s.clone(), Some(i)))),
            }
        }
        let sems_per_device = sem_decls.len();
        Ok(Compiler {
            kernel,
            name: kernel.name.clone(),
            mesh,
            base,
            initial: vec![ValueId::UNDEF; cells.len()],
            cells,
            pool: Vec::new(),
            values: ValueTable::new(),
            sem_decls,
            sem_base,
            sems_per_device,
            ops_total: 0,
            formulas: Vec::new(),
            formula_ids: Default::default(),
        })
    }

    fn fill_initial_values(&mut self) {
        for (i, cell) in self.cells.iter().enumerate() {
            let Some(input) = input_ordinal(self.kernel, cell.buffer) else { continue };
            let atom = match cell.owner {
                Some(d) => input_atom(input, d.0, &cell.index, &self.kernel.buffers[cell.buffer].shape),
                None => {
                    let at = |k: usize| cell.index.get(k).copied().unwrap_or(0) as u16;
                    Atom { origin: at(0), block: 0, part: at(1), input }
                }
            };
            self.initial[i] = self.values.atom(atom);
        }
    }

    fn device_program(&mut self, d: DeviceId, repeat: u32) -> Result<DeviceProgram, ModelError> {
        let mut out =
            Emitter { ops: Vec::new(), info: Vec::new(), stmt: None, loc: None, quiet: Vec::new(), prefix: None };
        let mut enter_pc = Vec::new();
        let mut exit_pc = Vec::new();
        let coords = self.mesh.coords(d);
        // A kernel is one launch of its own body; a program of several kernels, its launches
        // in order, each an invocation of its own (its statement ids come after the launch's).
        let kernel = self.kernel;
        let units: Vec<Unit<'_>> = if kernel.is_program() {
            let mut id = 0u32;
            let mut units = Vec::new();
            for stmt in &kernel.body {
                if let StmtKind::Launch(l) = &stmt.kind {
                    let barrier = l.implicit_entry_barrier(kernel);
                    units.push(Unit { name: &l.name, grid: &l.grid, body: &l.body, first: id + 1, barrier });
                }
                id += stmt.subtree_len();
            }
            units
        } else {
            let barrier = kernel.implicit_entry_barrier();
            vec![Unit { name: &kernel.name, grid: &kernel.grid, body: &kernel.body, first: 0, barrier }]
        };
        let several = units.len() > 1 || kernel.is_program();
        let mut inv = 0u32;
        for _ in 0..repeat {
            for unit in &units {
                self.name = unit.name.to_string();
                out.prefix = several.then(|| unit.name.to_string());
                // SMEM scalar state: the caller's values at every entry, the rest undefined.
                let mut memory = self.scalar_memory(&coords);
                enter_pc.push(out.ops.len() as u32);
                out.push(Op::Enter, format!("enter {}", unit.name), inv, &[]);
                if unit.barrier {
                    let label = match several {
                        true => format!("entry barrier of {} (implicit)", unit.name),
                        false => "entry barrier (implicit)".into(),
                    };
                    out.push(Op::EntryBarrier, label, inv, &[]);
                }
                let total: usize = unit.grid.iter().product();
                for flat in 0..total {
                    let ids = unravel(flat, unit.grid);
                    let mut here = Here {
                        device: d,
                        mesh: self.mesh,
                        coords: &coords,
                        grid: unit.grid,
                        program_ids: ids,
                        invocation: inv,
                        vars: Vec::new(),
                        poisoned: Vec::new(),
                        memory,
                        loc: None,
                    };
                    self.walk(unit.body, unit.first, &mut here, &mut out)?;
                    memory = here.memory;
                    self.check_size(d, out.ops.len())?;
                }
                exit_pc.push(out.ops.len() as u32);
                out.push(Op::Exit, format!("exit {}", unit.name), inv, &[]);
                inv += 1;
            }
        }
        out.prefix = None;
        self.name = kernel.name.clone();
        self.check_size(d, out.ops.len())?;
        self.ops_total += out.ops.len();
        let reset = self
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.owner == Some(d))
            .map(|(i, _)| (CellId(i as u32), self.initial[i]))
            .collect();
        Ok(DeviceProgram {
            ops: out.ops,
            info: out.info,
            enter_pc,
            exit_pc,
            reset,
            expected: Vec::new(),
            quiet: out.quiet,
        })
    }

    /// The entry contents of every SMEM scalar array on the device at `coords`.
    fn scalar_memory(&self, coords: &[usize]) -> Vec<Vec<Option<i64>>> {
        self.kernel
            .scalars
            .iter()
            .map(|decl| match decl.init.iter().find(|i| i.coords == coords) {
                Some(init) => (0..decl.len).map(|k| init.values.get(k).copied()).collect(),
                None => vec![None; decl.len],
            })
            .collect()
    }

    /// The element of an SMEM scalar array that `stmt` (a scalar load or store) names.
    /// Its words are formatted only for an error: these statements run at every
    /// iteration of the loops around them.
    fn scalar_slot(&self, stmt: &Stmt, scalar: usize, index: &Expr, here: &Here<'_>) -> Result<usize, ModelError> {
        let i = self.eval_in(stmt, index, here)?;
        self.scalar_slot_at(stmt, scalar, i, here)
    }

    /// [`Self::scalar_slot`] for an index already evaluated.
    fn scalar_slot_at(&self, stmt: &Stmt, scalar: usize, i: i64, here: &Here<'_>) -> Result<usize, ModelError> {
        let fail = |kind, problem| self.err(here, &crate::stmt_text::statement(self.kernel, stmt), kind, problem);
        let decl = self.kernel.scalars.get(scalar).ok_or_else(|| {
            fail(ErrorKind::UnknownBuffer, format!("scalar array #{scalar} is not declared by this kernel"))
        })?;
        if i < 0 || i as usize >= decl.len {
            return Err(fail(
                ErrorKind::OutOfRange,
                format!("index {i} out of range for `{}` ({} elements)", decl.name, decl.len),
            ));
        }
        Ok(i as usize)
    }

    /// Why a load of scalar array `scalar` at index `i` reads outside it, if it does.
    fn outside(&self, scalar: usize, i: i64) -> Option<String> {
        let decl = self.kernel.scalars.get(scalar)?;
        (i < 0 || i as usize >= decl.len).then(|| {
            format!(
                "uses a value loaded from `{}` at index {i}, outside its {} elements (Mosaic does not check an SMEM index)",
                decl.name, decl.len
            )
        })
    }

    /// The elements of scalar array `scalar` in `range`, each checked to be in range.
    fn scalar_slots(
        &self,
        stmt: &Stmt,
        scalar: usize,
        range: &ScalarRange,
        here: &Here<'_>,
    ) -> Result<Vec<usize>, ModelError> {
        let start = self.eval_in(stmt, &range.start, here)?;
        let mut offsets = range.offsets();
        if let Some(count) = &range.count {
            let n = self.eval_in(stmt, count, here)?;
            if n < 0 || n as usize > offsets.len() {
                return Err(self.err(
                    here,
                    &crate::stmt_text::statement(self.kernel, stmt),
                    ErrorKind::BadExpression,
                    format!(
                        "copies {n} elements of `{}`, where its view holds at most {}",
                        self.kernel.scalars[scalar].name,
                        offsets.len()
                    ),
                ));
            }
            offsets.truncate(n as usize);
        }
        offsets.into_iter().map(|o| self.scalar_slot(stmt, scalar, &Expr::Const(start + o), here)).collect()
    }

    /// The value of element `slot` of scalar array `scalar`: an error if nothing was
    /// stored there yet.
    fn scalar_value(&self, stmt: &Stmt, scalar: usize, slot: usize, here: &Here<'_>) -> Result<i64, ModelError> {
        here.memory[scalar][slot].ok_or_else(|| {
            self.err(
                here,
                &crate::stmt_text::statement(self.kernel, stmt),
                ErrorKind::BadExpression,
                format!(
                    "reads element {slot} of `{}` before anything was stored there",
                    self.kernel.scalars[scalar].name
                ),
            )
        })
    }

    /// [`Self::eval`] for an expression of `stmt`, which is named only in an error.
    fn eval_in(&self, stmt: &Stmt, e: &Expr, here: &Here<'_>) -> Result<i64, ModelError> {
        e.eval(&here.env()).map_err(|err| {
            let what = crate::stmt_text::statement(self.kernel, stmt);
            self.err(here, &what, ErrorKind::BadExpression, err.message().to_string())
        })
    }

    fn check_size(&self, d: DeviceId, ops: usize) -> Result<(), ModelError> {
        let name = &self.name;
        if ops >= MAX_OPS_PER_DEVICE {
            return Err(ModelError::new(
                ErrorKind::TooLarge,
                format!("kernel {name}: {ops} operations on {d}, more than the {MAX_OPS_PER_DEVICE} a state can hold"),
            ));
        }
        if self.ops_total + ops > MAX_OPS_TOTAL {
            return Err(ModelError::new(
                ErrorKind::TooLarge,
                format!(
                    "kernel {name}: more than {MAX_OPS_TOTAL} operations over the {} devices of the mesh; use fewer devices",
                    self.mesh.num_devices()
                ),
            ));
        }
        Ok(())
    }

    fn err(&self, here: &Here<'_>, what: &str, kind: ErrorKind, problem: String) -> ModelError {
        let g: Vec<String> = here.program_ids.iter().map(|i| i.to_string()).collect();
        let at = here.loc.as_ref().map(|l| format!(" @ {l}")).unwrap_or_default();
        ModelError::new(
            kind,
            format!("kernel {}: {what}{at} on {} at grid ({}): {problem}", self.name, here.device, g.join(",")),
        )
    }

    fn eval(&self, e: &Expr, here: &Here<'_>, what: &str) -> Result<i64, ModelError> {
        e.eval(&here.env()).map_err(|err| self.err(here, what, ErrorKind::BadExpression, err.message().to_string()))
    }

    /// Emits the operations of `body` whose first statement has pre-order number `first`
    /// (see [`Kernel::statements`]).
    fn walk(&mut self, body: &[Stmt], first: u32, here: &mut Here<'_>, out: &mut Emitter) -> Result<(), ModelError> {
        let mut id = first;
        for stmt in body {
            out.stmt = Some(StmtId(id));
            out.loc = stmt.loc.as_ref().filter(|l| l.text.is_some()).map(|l| l.to_string());
            here.loc.clone_from(&out.loc);
            match &stmt.kind {
                StmtKind::When { cond, body } => {
                    if self.eval(cond, here, &format!("pl.when({cond})"))? != 0 {
                        self.walk(body, id + 1, here, out)?;
                    }
                }
                StmtKind::Scoped { body, .. } => self.walk(body, id + 1, here, out)?,
                StmtKind::Launch(l) => {
                    return Err(self.err(
                        here,
                        &format!("kernel {}", l.name),
                        ErrorKind::BadDeclaration,
                        "a launch of a kernel is only allowed at the top of a program of several kernels".into(),
                    ));
                }
                StmtKind::Loop { vars, init, count, cond, next, body } => {
                    self.run_loop(vars, init, *count, cond.as_ref(), next, body, id + 1, here, out)?;
                }
                // A copy of a slice of computed size 0 moves nothing and signals nothing,
                // and a wait for its 0 bytes passes at once: neither is an operation.
                StmtKind::DmaStart(desc) => match self.dma_start(desc, here)? {
                    (Op::LocalDma { bytes: 0, .. } | Op::RemoteDma { bytes: 0, .. }, _) => {
                        out.quiet.push((out.ops.len() as u32, StmtId(id)));
                    }
                    (op, label) => out.push(op, label, here.invocation, &here.program_ids),
                },
                StmtKind::DmaWait { dma, part } => {
                    for (op, label) in self.dma_waits(dma, *part, here)? {
                        match op {
                            Op::Wait { amount: 0, .. } => out.quiet.push((out.ops.len() as u32, StmtId(id))),
                            op => out.push(op, label, here.invocation, &here.program_ids),
                        }
                    }
                }
                StmtKind::Signal { sem, inc, device } => {
                    let what = format!("semaphore_signal({})", self.sem_label(sem));
                    let target = self.dest(device, here, &what)?;
                    let slot = self.sem(sem, here, &what, &[SemKind::Regular, SemKind::Barrier], target)?;
                    let inc = self.amount(inc, here, &what)?;
                    let label = format!("signal {} +{inc} -> {target}", self.sem_name(slot));
                    out.push(Op::Signal { target, sem: slot, inc }, label, here.invocation, &here.program_ids);
                }
                StmtKind::Wait { sem, amount } => {
                    let what = format!("semaphore_wait({})", self.sem_label(sem));
                    let slot = self.sem(sem, here, &what, &[SemKind::Regular, SemKind::Barrier], here.device)?;
                    let amount = self.amount(amount, here, &what)?;
                    let label = format!("wait {} {amount}", self.sem_name(slot));
                    out.push(Op::Wait { sem: slot, amount }, label, here.invocation, &here.program_ids);
                }
                StmtKind::Assign { dst, rhs: Rhs::Compute { value, cellwise } } => {
                    let (op, label) = self.compute(dst, value, *cellwise, here)?;
                    out.push(op, label, here.invocation, &here.program_ids);
                }
                StmtKind::Assign { dst, rhs } => {
                    let what = format!("{}[...] = ...", self.buffer_name(dst));
                    let (dcells, _) = self.cells_of(dst, here.device, here, &what)?;
                    let (kind, src, label) = match rhs {
                        Rhs::Zeros => (ComputeKind::Zero, Vec::new(), format!("{} = zeros", self.view_name(&dcells))),
                        Rhs::Load(src) => {
                            let (s, _) = self.cells_of(src, here.device, here, &what)?;
                            let label = format!("{} = {}", self.view_name(&dcells), self.view_name(&s));
                            (ComputeKind::Copy, s, label)
                        }
                        Rhs::Map { func, src } => {
                            let (s, _) = self.cells_of(src, here.device, here, &what)?;
                            let f = self.values.func(func);
                            let label =
                                format!("{} = {}", self.view_name(&dcells), func.replace("{}", &self.view_name(&s)));
                            (ComputeKind::Apply(f), s, label)
                        }
                        Rhs::Compute { .. } => unreachable!("matched above"),
                    };
                    if kind != ComputeKind::Zero && src.len() != dcells.len() {
                        return Err(self.err(
                            here,
                            &what,
                            ErrorKind::SizeMismatch,
                            format!("{} cells assigned from {}", dcells.len(), src.len()),
                        ));
                    }
                    let op = Op::Compute { kind, dst: self.span(dcells), src: self.span(src) };
                    out.push(op, label, here.invocation, &here.program_ids);
                }
                StmtKind::ScalarLoad { var, scalar, index } => {
                    let i = self.eval_in(stmt, index, here)?;
                    if let Some(why) = self.outside(*scalar, i) {
                        // Mosaic does not check an SMEM index: the word read is not the
                        // array's. Its value is none; using it is an error.
                        here.poisoned.retain(|(p, _)| p != var);
                        here.poisoned.push((var.clone(), why));
                        out.quiet.push((out.ops.len() as u32, StmtId(id)));
                        id += stmt.subtree_len();
                        continue;
                    }
                    let slot = self.scalar_slot_at(stmt, *scalar, i, here)?;
                    match here.memory[*scalar][slot] {
                        Some(value) => here.set_vars(std::slice::from_ref(var), &[value]),
                        None => {
                            // Scratch never written holds what was there before (a dead
                            // row's stale index): its value is none; using it is an error.
                            let why = format!(
                                "uses a value loaded from element {slot} of `{}` before anything was stored there",
                                self.kernel.scalars[*scalar].name
                            );
                            here.poisoned.retain(|(p, _)| p != var);
                            here.poisoned.push((var.clone(), why));
                        }
                    }
                    out.quiet.push((out.ops.len() as u32, StmtId(id)));
                }
                StmtKind::ScalarStore { scalar, index, value } => {
                    let slot = self.scalar_slot(stmt, *scalar, index, here)?;
                    here.memory[*scalar][slot] = Some(self.eval_in(stmt, value, here)?);
                    out.quiet.push((out.ops.len() as u32, StmtId(id)));
                }
                StmtKind::ScalarCopy { scalar, dst, source, src } => {
                    let from = self.scalar_slots(stmt, *source, src, here)?;
                    let to = self.scalar_slots(stmt, *scalar, dst, here)?;
                    if from.len() != to.len() {
                        return Err(self.err(
                            here,
                            &crate::stmt_text::statement(self.kernel, stmt),
                            ErrorKind::SizeMismatch,
                            format!("{} elements copied into {}", from.len(), to.len()),
                        ));
                    }
                    let values = from
                        .iter()
                        .map(|&i| self.scalar_value(stmt, *source, i, here))
                        .collect::<Result<Vec<_>, _>>()?;
                    for (&i, v) in to.iter().zip(values) {
                        here.memory[*scalar][i] = Some(v);
                    }
                    out.quiet.push((out.ops.len() as u32, StmtId(id)));
                }
                StmtKind::AddAssign { dst, src } => {
                    let what = format!("{}[...] += {}[...]", self.buffer_name(dst), self.buffer_name(src));
                    let (d, _) = self.cells_of(dst, here.device, here, &what)?;
                    let (s, _) = self.cells_of(src, here.device, here, &what)?;
                    if d.len() != s.len() {
                        return Err(self.err(
                            here,
                            &what,
                            ErrorKind::SizeMismatch,
                            format!("{} cells added to {}", s.len(), d.len()),
                        ));
                    }
                    let label = format!("{} += {}", self.view_name(&d), self.view_name(&s));
                    let op = Op::Compute { kind: ComputeKind::Add, dst: self.span(d), src: self.span(s) };
                    out.push(op, label, here.invocation, &here.program_ids);
                }
            }
            id += stmt.subtree_len();
        }
        out.stmt = None;
        out.loc = None;
        Ok(())
    }

    /// Runs a loop statement's iterations (see [`StmtKind::Loop`]).
    #[allow(clippy::too_many_arguments)]
    fn run_loop(
        &mut self,
        vars: &[String],
        init: &[Expr],
        count: Option<u64>,
        cond: Option<&Expr>,
        next: &[Expr],
        body: &[Stmt],
        first: u32,
        here: &mut Here<'_>,
        out: &mut Emitter,
    ) -> Result<(), ModelError> {
        let what = format!("loop over ({})", vars.join(", "));
        if vars.len() != init.len() || vars.len() != next.len() {
            return Err(self.err(
                here,
                &what,
                ErrorKind::BadDeclaration,
                format!("{} variable(s), {} initial value(s), {} next value(s)", vars.len(), init.len(), next.len()),
            ));
        }
        let mut values = init.iter().map(|e| self.eval(e, here, &what)).collect::<Result<Vec<_>, _>>()?;
        let (loc, stmt) = (out.loc.clone(), out.stmt);
        let mut k = 0u64;
        loop {
            here.set_vars(vars, &values);
            if count.is_some_and(|c| k >= c) {
                break;
            }
            if let Some(c) = cond {
                if self.eval(c, here, &what)? == 0 {
                    break;
                }
            }
            if k >= MAX_LOOP_ITERATIONS {
                return Err(self.err(
                    here,
                    &what,
                    ErrorKind::TooLarge,
                    format!("the loop runs more than {MAX_LOOP_ITERATIONS} iterations"),
                ));
            }
            self.walk(body, first, here, out)?;
            self.check_size(here.device, out.ops.len())?;
            (out.loc, out.stmt) = (loc.clone(), stmt);
            values = next.iter().map(|e| self.eval(e, here, &what)).collect::<Result<Vec<_>, _>>()?;
            k += 1;
        }
        Ok(())
    }
}

/// Where statements are being compiled: one device, one grid index, one invocation, and
/// the loop variables set so far at this grid index.
struct Here<'e> {
    device: DeviceId,
    mesh: &'e Mesh,
    coords: &'e [usize],
    grid: &'e [usize],
    program_ids: Vec<usize>,
    invocation: u32,
    vars: Vec<(String, i64)>,
    /// Variables holding no value, with why (a load of SMEM scalar state outside its
    /// array: Mosaic does not check the index); using one is an error.
    poisoned: Vec<(String, String)>,
    /// The device's SMEM scalar state ([`crate::ir::ScalarDecl`]): it persists from one
    /// grid index to the next.
    memory: Vec<Vec<Option<i64>>>,
    /// The source location of the statement being compiled (Python kernels), for errors.
    loc: Option<String>,
}

impl Here<'_> {
    fn env(&self) -> EvalEnv<'_> {
        EvalEnv {
            mesh: self.mesh,
            coords: self.coords,
            grid: self.grid,
            program_ids: &self.program_ids,
            vars: &self.vars,
            poisoned: &self.poisoned,
        }
    }

    /// Sets loop variables; they stay set after their loop (its results).
    fn set_vars(&mut self, names: &[String], values: &[i64]) {
        self.poisoned.retain(|(p, _)| !names.contains(p));
        for (n, v) in names.iter().zip(values) {
            match self.vars.iter_mut().find(|(m, _)| m == n) {
                Some(slot) => slot.1 = *v,
                None => self.vars.push((n.clone(), *v)),
            }
        }
    }
}

struct Emitter {
    ops: Vec<Op>,
    info: Vec<OpInfo>,
    /// The statement being compiled (`None` for entry, exit and the entry barrier).
    stmt: Option<StmtId>,
    /// Its source location, when the front end gave one with the line's text (Python
    /// kernels): labels end with `@ psum.py:57 remote.start()`.
    loc: Option<String>,
    /// See [`DeviceProgram::quiet`].
    quiet: Vec<(u32, StmtId)>,
    /// In a program of several kernels, the kernel whose statements are compiled: every
    /// label of its body starts with `kernel: `.
    prefix: Option<String>,
}

/// What one invocation of a device's program runs: a kernel, or one launch of a program
/// of several kernels.
struct Unit<'k> {
    name: &'k str,
    grid: &'k [usize],
    body: &'k [Stmt],
    /// The statement id of the body's first statement.
    first: u32,
    /// Whether JAX's implicit entry barrier runs after its entry.
    barrier: bool,
}

impl Emitter {
    fn push(&mut self, op: Op, label: String, invocation: u32, grid: &[usize]) {
        let label = match (&self.prefix, self.stmt) {
            (Some(kernel), Some(_)) => format!("{kernel}: {label}"),
            _ => label,
        };
        let label = match &self.loc {
            Some(loc) => format!("{label} @ {loc}"),
            None => label,
        };
        self.ops.push(op);
        self.info.push(OpInfo { label, invocation, grid: grid.to_vec(), stmt: self.stmt });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::trace;
    use crate::ir::{Data, Dest, DmaDesc, Index, Level, MemorySpace, ScalarDecl, ScalarInit};

    #[test]
    fn loops_formulas_and_logical_ids_compile_per_device() {
        let n = 3usize;
        let kernel = trace("extended", |k| {
            let x = k.input("x", MemorySpace::Vmem, &[]);
            let w = k.input("w", MemorySpace::Vmem, &[]);
            let o = k.output("o", MemorySpace::Vmem, &[2]);
            let sem = k.regular_semaphore("sem");
            let me = k.axis_index("x");
            // Static trip count: two signals to the right, by LOGICAL id.
            k.fori_loop("i", 2, |k, _| k.semaphore_signal(&sem, 1, k.logical_device((me.clone() + 1) % n)));
            // Device-dependent trip count: `me` waits of one.
            k.while_loop(
                &[("j", Expr::Const(0))],
                |c| c[0].clone().less(me.clone()),
                |k, c| {
                    k.semaphore_wait(&sem, 1);
                    vec![c[0].clone() + 1i64]
                },
            );
            o.compute(Data::apply("dot({}, {})", vec![x.load(), w.load()]), false);
        })
        .unwrap();
        let spec = Spec::plain(vec![]);
        let p = compile(&kernel, &Mesh::ring(n).unwrap(), &spec, 1).unwrap();
        for d in 0..n {
            let ops = &p.devices[d].ops;
            let signals: Vec<_> = ops
                .iter()
                .filter_map(|op| match op {
                    Op::Signal { target, .. } => Some(target.0 as usize),
                    _ => None,
                })
                .collect();
            assert_eq!(signals, vec![(d + 1) % n; 2], "d{d}");
            assert_eq!(ops.iter().filter(|op| matches!(op, Op::Wait { .. })).count(), d, "d{d}");
            let Some(Op::Compute { kind: ComputeKind::Formula(f), dst, src }) =
                ops.iter().find(|op| matches!(op, Op::Compute { .. }))
            else {
                panic!("d{d}: no formula");
            };
            assert_eq!((dst.len, src.len), (2, 2));
            assert!(!p.formulas[*f as usize].cellwise);
        }
    }

    /// The increments of device `d`'s signals, in order.
    fn signal_increments(p: &Program, d: usize) -> Vec<u32> {
        p.devices[d]
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Signal { inc, .. } => Some(*inc),
                _ => None,
            })
            .collect()
    }

    /// A kernel over a grid of 3 whose SMEM slot counter starts at each device's entry
    /// value, is read by a signal's increment and a copy's size, and is bumped each step.
    fn counter_kernel(init: bool) -> Kernel {
        let mut kernel = trace("counter", |k| {
            k.grid(&[3]);
            let x = k.input("x", MemorySpace::Vmem, &[4]);
            let o = k.output("o", MemorySpace::Vmem, &[4]);
            let sem = k.regular_semaphore("sem");
            let dma = k.dma_semaphore("dma");
            k.semaphore_signal(&sem, Expr::Var("v".into()), Dest::Own);
            k.semaphore_wait(&sem, Expr::Var("v".into()));
            let c = k.make_async_copy(&x, &o, &dma);
            c.start();
            c.wait();
        })
        .unwrap();
        let v = || Expr::Var("v".into());
        let load = Stmt::from(StmtKind::ScalarLoad { var: "v".into(), scalar: 0, index: Expr::Const(0) });
        let bump = Stmt::from(StmtKind::ScalarStore { scalar: 0, index: Expr::Const(0), value: v() + 1i64 });
        kernel.body.insert(0, load);
        kernel.body.push(bump);
        // The copy moves `v - 1` cells (0 at the first step of device 0).
        for stmt in &mut kernel.body {
            if let StmtKind::DmaStart(DmaDesc::Local { src, dst, .. })
            | StmtKind::DmaWait { dma: DmaDesc::Local { src, dst, .. }, .. } = &mut stmt.kind
            {
                for r in [src, dst] {
                    r.indexing =
                        vec![Level::Index(vec![Index::Slice { start: Expr::Const(0), size: v() - 1i64, step: 1 }])];
                }
            }
        }
        let init = if init {
            (0..2).map(|d| ScalarInit { coords: vec![d], values: vec![1 + d as i64] }).collect()
        } else {
            Vec::new()
        };
        kernel.scalars.push(ScalarDecl { name: "slot".into(), len: 1, init });
        kernel
    }

    #[test]
    fn smem_scalar_state_persists_across_the_grid_and_restarts_each_invocation() {
        let spec = Spec::plain(vec![]);
        let p = compile(&counter_kernel(true), &Mesh::ring(2).unwrap(), &spec, 2).unwrap();
        for d in 0..2 {
            let incs = signal_increments(&p, d);
            let first = 1 + d as u32;
            let steps = [first, first + 1, first + 2];
            assert_eq!(incs, [steps, steps].concat(), "d{d}");
            // A copy of 0 cells (device 0's first step) is no operation, nor is its wait.
            let copies = p.devices[d].ops.iter().filter(|op| matches!(op, Op::LocalDma { .. })).count();
            assert_eq!(copies, if d == 0 { 4 } else { 6 }, "d{d}");
            let quiet = p.devices[d].quiet.len();
            assert_eq!(quiet, 2 * 3 * 2 + if d == 0 { 4 } else { 0 }, "d{d}: loads, stores, the empty copy");
        }
        assert!(crate::coverage::Coverage::exhaustive(&p).is_complete());
        // Without entry values the first load reads an element never stored.
        let e = compile(&counter_kernel(false), &Mesh::ring(2).unwrap(), &spec, 1).unwrap_err();
        assert!(
            e.to_string().contains("uses a value loaded from element 0 of `slot` before anything was stored"),
            "{e}"
        );
    }

    /// A kernel that copies elements `start, start + 1` of a table into a two-element
    /// window, then signals itself by the window's second element.
    fn window_kernel(start: i64) -> Kernel {
        counted_window_kernel(start, None)
    }

    /// [`window_kernel`] whose copy takes only the first `count` elements.
    fn counted_window_kernel(start: i64, count: Option<i64>) -> Kernel {
        let mut kernel = trace("window", |k| {
            let sem = k.regular_semaphore("sem");
            k.semaphore_signal(&sem, Expr::Var("v".into()), Dest::Own);
            k.semaphore_wait(&sem, Expr::Var("v".into()));
        })
        .unwrap();
        let range =
            |start: i64| ScalarRange { start: Expr::Const(start), dims: vec![(2, 1)], count: count.map(Expr::Const) };
        let copy = StmtKind::ScalarCopy { scalar: 1, dst: range(0), source: 0, src: range(start) };
        let load = StmtKind::ScalarLoad { var: "v".into(), scalar: 1, index: Expr::Const(1) };
        kernel.body.splice(0..0, [Stmt::from(copy), Stmt::from(load)]);
        let init = (0..2).map(|d| ScalarInit { coords: vec![d], values: (0..6).map(|i| 10 * d as i64 + i).collect() });
        kernel.scalars.push(ScalarDecl { name: "table".into(), len: 6, init: init.collect() });
        kernel.scalars.push(ScalarDecl { name: "win".into(), len: 2, init: vec![] });
        kernel
    }

    #[test]
    fn a_scalar_copy_gives_the_window_the_table_s_values() {
        let spec = Spec::plain(vec![]);
        let p = compile(&window_kernel(2), &Mesh::ring(2).unwrap(), &spec, 1).unwrap();
        for d in 0..2 {
            let incs = signal_increments(&p, d);
            assert_eq!(incs, [10 * d as u32 + 3], "d{d}: element 3 of the table");
        }
        let e = compile(&window_kernel(5), &Mesh::ring(2).unwrap(), &spec, 1).unwrap_err();
        assert!(e.to_string().contains("index 6 out of range for `table` (6 elements)"), "{e}");
    }

    #[test]
    fn a_scalar_copy_of_computed_length_writes_only_that_many_elements() {
        let spec = Spec::plain(vec![]);
        let mesh = Mesh::ring(2).unwrap();
        // Both elements: as without a count.
        let p = compile(&counted_window_kernel(2, Some(2)), &mesh, &spec, 1).unwrap();
        assert_eq!(signal_increments(&p, 1), [13]);
        // One element: the window's second is never written, and using it is an error
        // (loading it is not: a dead row of a branchless copy loads a stale index).
        let e = compile(&counted_window_kernel(2, Some(1)), &mesh, &spec, 1).unwrap_err();
        assert!(e.to_string().contains("uses a value loaded from element 1 of `win` before anything"), "{e}");
        let e = compile(&counted_window_kernel(2, Some(3)), &mesh, &spec, 1).unwrap_err();
        assert!(e.to_string().contains("copies 3 elements of `table`, where its view holds at most 2"), "{e}");
    }

    #[test]
    fn a_loop_that_never_ends_is_an_error_not_a_hang() {
        let kernel = trace("forever", |k| {
            k.while_loop(&[("i", Expr::Const(0))], |_| Expr::Const(1), |_, c| vec![c[0].clone()]);
        })
        .unwrap();
        let spec = Spec::plain(vec![]);
        let e = compile(&kernel, &Mesh::ring(2).unwrap(), &spec, 1).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::TooLarge);
    }
}
