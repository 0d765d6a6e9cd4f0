//! A kernel of the document -> the IR ([`Kernel`]) and its mesh.
//!
//! Every field is checked; a malformed one is an error naming the kernel and where in the
//! document it is. `switch` statements (a `lax.cond`/`lax.switch` with non-empty
//! branches) become one `when` per branch on the index clamped into range, which is what
//! XLA's conditional does with an out-of-range index.

use serde_json::Value;

use semcheck_model::expr::{BinOp, Expr};
use semcheck_model::ir::{
    BufferDecl, BufferId, BufferRole, Data, Dest, DmaDesc, Index, Kernel, Level, Loc, MemorySpace, RefExpr, Rhs,
    ScalarDecl, ScalarInit, ScalarRange, SemDecl, SemId, SemKind, SemRef, Stmt, StmtKind, WaitPart,
};
use semcheck_model::mesh::Axis;
use semcheck_model::{ErrorKind, Mesh, ModelError};

use super::document::{KernelDoc, LocDoc};

/// An imported kernel: the IR, its mesh and what the front end said about its entry.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The kernel.
    pub kernel: Kernel,
    /// Its mesh (the `shard_map`'s, or the TensorCores').
    pub mesh: Mesh,
    /// `shard_map` or `tensorcore`.
    pub mesh_kind: String,
    /// Whether the front end expects the implicit entry barrier.
    pub implicit_entry_barrier: bool,
}

struct Importer<'d> {
    kernel: &'d str,
    n_buffers: usize,
    n_sems: usize,
    n_scalars: usize,
}

fn malformed(kernel: &str, path: &str, what: impl std::fmt::Display) -> ModelError {
    ModelError::new(ErrorKind::BadDeclaration, format!("kernel {kernel}: malformed document at {path}: {what}"))
}

fn field<'v>(v: &'v Value, key: &str, kernel: &str, path: &str) -> Result<&'v Value, ModelError> {
    v.get(key).ok_or_else(|| malformed(kernel, path, format!("missing `{key}`")))
}

fn as_str<'v>(v: &'v Value, kernel: &str, path: &str) -> Result<&'v str, ModelError> {
    v.as_str().ok_or_else(|| malformed(kernel, path, "expected a string"))
}

fn as_u64(v: &Value, kernel: &str, path: &str) -> Result<u64, ModelError> {
    v.as_u64().ok_or_else(|| malformed(kernel, path, "expected a non-negative integer"))
}

fn as_array<'v>(v: &'v Value, kernel: &str, path: &str) -> Result<&'v Vec<Value>, ModelError> {
    v.as_array().ok_or_else(|| malformed(kernel, path, "expected an array"))
}

/// The IR of a kernel record with status `ok`.
pub fn import(k: &KernelDoc) -> Result<Imported, ModelError> {
    let name = k.name.as_str();
    let rest = serde_json::to_value(&k.rest).map_err(|e| malformed(name, "kernel", e))?;
    let mesh_v = field(&rest, "mesh", name, "kernel")?;
    let mesh_kind = as_str(field(mesh_v, "kind", name, "mesh")?, name, "mesh.kind")?.to_string();
    let mut axes = Vec::new();
    for (i, a) in as_array(field(mesh_v, "axes", name, "mesh")?, name, "mesh.axes")?.iter().enumerate() {
        let p = format!("mesh.axes[{i}]");
        axes.push(Axis {
            name: as_str(field(a, "name", name, &p)?, name, &p)?.to_string(),
            size: as_u64(field(a, "size", name, &p)?, name, &p)? as usize,
        });
    }
    let mesh = if axes.is_empty() {
        return Err(ModelError::new(
            ErrorKind::Unsupported,
            format!("kernel {name}: it runs outside any mesh (no shard_map, no TensorCore mesh): nothing to communicate with"),
        ));
    } else {
        Mesh::new(axes).map_err(|e| malformed(name, "mesh", e))?
    };
    let grid = as_array(field(&rest, "grid", name, "kernel")?, name, "grid")?
        .iter()
        .map(|g| as_u64(g, name, "grid").map(|g| g as usize))
        .collect::<Result<Vec<_>, _>>()?;
    let entry = field(&rest, "entry", name, "kernel")?;
    let collective_id = match field(entry, "collective_id", name, "entry")? {
        Value::Null => None,
        v => Some(
            u32::try_from(as_u64(v, name, "entry.collective_id")?)
                .map_err(|_| malformed(name, "entry.collective_id", "too large"))?,
        ),
    };
    let flag = |key: &str| entry.get(key).and_then(Value::as_bool).unwrap_or(false);
    let implicit_entry_barrier = flag("implicit_entry_barrier");

    let mut buffers = Vec::new();
    for (i, b) in as_array(field(&rest, "buffers", name, "kernel")?, name, "buffers")?.iter().enumerate() {
        let p = format!("buffers[{i}]");
        let space = match as_str(field(b, "space", name, &p)?, name, &p)? {
            "hbm" => MemorySpace::Hbm,
            "vmem" => MemorySpace::Vmem,
            "smem" => MemorySpace::Smem,
            other => return Err(malformed(name, &p, format!("unknown memory space `{other}`"))),
        };
        let role = match as_str(field(b, "role", name, &p)?, name, &p)? {
            "input" => BufferRole::Input,
            "output" => BufferRole::Output,
            "scratch" => BufferRole::Scratch,
            "input_output" => BufferRole::InputOutput,
            other => return Err(malformed(name, &p, format!("unknown role `{other}`"))),
        };
        let shape = as_array(field(b, "shape", name, &p)?, name, &p)?
            .iter()
            .map(|s| as_u64(s, name, &p).map(|s| s as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let cell_bytes = u32::try_from(as_u64(field(b, "cell_bytes", name, &p)?, name, &p)?)
            .map_err(|_| malformed(name, &p, "cell_bytes too large"))?;
        buffers.push(BufferDecl {
            name: as_str(field(b, "name", name, &p)?, name, &p)?.to_string(),
            space,
            role,
            shape,
            cell_bytes,
            shared: b.get("shared").and_then(Value::as_bool).unwrap_or(false),
            cell_elements: cell_elements(b),
        });
    }
    let mut semaphores = Vec::new();
    for (i, s) in as_array(field(&rest, "semaphores", name, "kernel")?, name, "semaphores")?.iter().enumerate() {
        let p = format!("semaphores[{i}]");
        let kind = match as_str(field(s, "kind", name, &p)?, name, &p)? {
            "dma" => SemKind::Dma,
            "regular" => SemKind::Regular,
            "barrier" => SemKind::Barrier,
            other => return Err(malformed(name, &p, format!("unknown semaphore kind `{other}`"))),
        };
        let len = match s.get("len") {
            None | Some(Value::Null) => None,
            Some(v) => Some(as_u64(v, name, &p)? as usize),
        };
        semaphores.push(SemDecl {
            name: as_str(field(s, "name", name, &p)?, name, &p)?.to_string(),
            kind,
            len,
            scoped: s.get("scoped").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    let scalars = match rest.get("scalars") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => scalars(v, name)?,
    };
    let im = Importer { kernel: name, n_buffers: buffers.len(), n_sems: semaphores.len(), n_scalars: scalars.len() };
    let body = im.block(field(&rest, "body", name, "kernel")?, "body")?;
    let kernel = Kernel {
        name: name.to_string(),
        grid,
        buffers,
        semaphores,
        scalars,
        collective_id,
        skip_device_barrier: flag("skip_device_barrier"),
        allow_collective_id_without_custom_barrier: flag("allow_collective_id_without_custom_barrier"),
        body,
    };
    Ok(Imported { kernel, mesh, mesh_kind, implicit_entry_barrier })
}

/// Elements per cell along each dimension of a buffer's cell shape: the `cell` of the
/// array dimensions listed in `cell_dims` (empty when the document does not say).
fn cell_elements(b: &Value) -> Vec<usize> {
    let numbers = |key: &str| -> Option<Vec<usize>> {
        b.get(key)?.as_array()?.iter().map(|v| v.as_u64().map(|n| n as usize)).collect()
    };
    match (numbers("cell"), numbers("cell_dims")) {
        (Some(cell), Some(dims)) => dims.iter().filter_map(|&k| cell.get(k).copied()).collect(),
        _ => Vec::new(),
    }
}

/// The SMEM scalar arrays of a kernel record (`scalars` of `python/SCHEMA.md`).
fn scalars(v: &Value, name: &str) -> Result<Vec<ScalarDecl>, ModelError> {
    let numbers = |v: &Value, p: &str| -> Result<Vec<i64>, ModelError> {
        as_array(v, name, p)?
            .iter()
            .map(|x| x.as_i64().ok_or_else(|| malformed(name, p, "expected integers")))
            .collect()
    };
    let mut out = Vec::new();
    for (i, d) in as_array(v, name, "scalars")?.iter().enumerate() {
        let p = format!("scalars[{i}]");
        let len = as_u64(field(d, "len", name, &p)?, name, &p)? as usize;
        let mut init = Vec::new();
        if let Some(all) = d.get("init").filter(|v| !v.is_null()) {
            for (j, one) in as_array(all, name, &p)?.iter().enumerate() {
                let q = format!("{p}.init[{j}]");
                let coords = as_array(field(one, "device", name, &q)?, name, &q)?
                    .iter()
                    .map(|c| as_u64(c, name, &q).map(|c| c as usize))
                    .collect::<Result<Vec<_>, _>>()?;
                let values = numbers(field(one, "values", name, &q)?, &q)?;
                if values.len() != len {
                    return Err(malformed(name, &q, format!("{} values for {len} elements", values.len())));
                }
                init.push(ScalarInit { coords, values });
            }
        }
        out.push(ScalarDecl { name: as_str(field(d, "name", name, &p)?, name, &p)?.to_string(), len, init });
    }
    Ok(out)
}

/// The IR location of a document location: the statement's code, and where it was
/// called from when the innermost frame is a helper.
pub fn loc(l: &LocDoc) -> Loc {
    let mut text = l.code.clone().filter(|c| !c.is_empty()).or_else(|| l.text.clone()).unwrap_or_default();
    if text.chars().count() > 90 {
        text = text.chars().take(87).collect::<String>() + "...";
    }
    if let Some(caller) = l.stack.first() {
        text.push_str(&format!(" (via {})", caller.short()));
    }
    Loc { file: l.file.clone(), line: l.line, text: Some(text) }
}

impl Importer<'_> {
    fn err(&self, path: &str, what: impl std::fmt::Display) -> ModelError {
        malformed(self.kernel, path, what)
    }

    fn block(&self, v: &Value, path: &str) -> Result<Vec<Stmt>, ModelError> {
        let mut out = Vec::new();
        for (i, s) in as_array(v, self.kernel, path)?.iter().enumerate() {
            out.extend(self.stmt(s, &format!("{path}[{i}]"))?);
        }
        Ok(out)
    }

    fn stmt(&self, s: &Value, path: &str) -> Result<Vec<Stmt>, ModelError> {
        let k = self.kernel;
        let loc = match s.get("loc") {
            None | Some(Value::Null) => None,
            Some(l) => Some(loc(&serde_json::from_value::<LocDoc>(l.clone()).map_err(|e| self.err(path, e))?)),
        };
        let op = as_str(field(s, "op", k, path)?, k, path)?;
        let f = |key: &str| field(s, key, k, path);
        let kind = match op {
            "when" => StmtKind::When { cond: self.expr(f("cond")?, path)?, body: self.block(f("body")?, path)? },
            "switch" => {
                let index = self.expr(f("index")?, path)?;
                let branches = as_array(f("branches")?, k, path)?;
                let last = branches.len().saturating_sub(1) as i64;
                let clamped = index.max(0i64).min(last);
                let mut out = Vec::new();
                for (b, br) in branches.iter().enumerate() {
                    let body = self.block(br, &format!("{path}.branches[{b}]"))?;
                    if !body.is_empty() {
                        let cond = clamped.clone().equals(b as i64);
                        out.push(Stmt { kind: StmtKind::When { cond, body }, loc: loc.clone(), implicit: false });
                    }
                }
                return Ok(out);
            }
            "loop" => {
                let vars = as_array(f("vars")?, k, path)?
                    .iter()
                    .map(|v| as_str(v, k, path).map(str::to_string))
                    .collect::<Result<Vec<_>, _>>()?;
                let exprs = |key: &str| -> Result<Vec<Expr>, ModelError> {
                    as_array(f(key)?, k, path)?.iter().map(|e| self.expr(e, path)).collect()
                };
                let count = match f("count")? {
                    Value::Null => None,
                    v => Some(as_u64(v, k, path)?),
                };
                let cond = match f("cond")? {
                    Value::Null => None,
                    v => Some(self.expr(v, path)?),
                };
                StmtKind::Loop {
                    vars,
                    init: exprs("init")?,
                    count,
                    cond,
                    next: exprs("next")?,
                    body: self.block(f("body")?, path)?,
                }
            }
            "scoped" => {
                let sems = as_array(f("semaphores")?, k, path)?.iter().map(|v| self.sem_id(v, path)).collect::<Result<
                    Vec<_>,
                    _,
                >>(
                )?;
                StmtKind::Scoped { sems, body: self.block(f("body")?, path)? }
            }
            "dma_start" => StmtKind::DmaStart(self.dma(f("dma")?, path)?),
            "dma_wait" => {
                let part = match as_str(f("part")?, k, path)? {
                    "send" => WaitPart::Send,
                    "recv" => WaitPart::Recv,
                    "all" => WaitPart::All,
                    other => return Err(self.err(path, format!("unknown wait part `{other}`"))),
                };
                StmtKind::DmaWait { dma: self.dma(f("dma")?, path)?, part }
            }
            "signal" => StmtKind::Signal {
                sem: self.sem_ref(f("sem")?, path)?,
                inc: self.expr(f("inc")?, path)?,
                device: self.dest(f("device")?, path)?,
            },
            "wait" => StmtKind::Wait { sem: self.sem_ref(f("sem")?, path)?, amount: self.expr(f("amount")?, path)? },
            "store" => StmtKind::Assign {
                dst: self.view(f("dst")?, path)?,
                rhs: Rhs::Compute {
                    value: self.data(f("value")?, path)?,
                    cellwise: f("cellwise")?.as_bool().ok_or_else(|| self.err(path, "`cellwise` must be a boolean"))?,
                },
            },
            "scalar_load" => StmtKind::ScalarLoad {
                var: as_str(f("var")?, k, path)?.to_string(),
                scalar: self.scalar_id(f("scalar")?, path)?,
                index: self.expr(f("index")?, path)?,
            },
            "scalar_store" => StmtKind::ScalarStore {
                scalar: self.scalar_id(f("scalar")?, path)?,
                index: self.expr(f("index")?, path)?,
                value: self.expr(f("value")?, path)?,
            },
            "scalar_copy" => StmtKind::ScalarCopy {
                scalar: self.scalar_id(f("scalar")?, path)?,
                dst: self.scalar_range(f("dst")?, path)?,
                source: self.scalar_id(f("source")?, path)?,
                src: self.scalar_range(f("src")?, path)?,
            },
            other => return Err(self.err(path, format!("unknown statement `{other}`"))),
        };
        let implicit = match s.get("implicit") {
            None => false,
            Some(v) => v.as_bool().ok_or_else(|| self.err(path, "`implicit` must be a boolean"))?,
        };
        Ok(vec![Stmt { kind, loc, implicit }])
    }

    /// `{"start": E, "dims": [[size, stride], ...], "count": E}` (`count` optional).
    fn scalar_range(&self, v: &Value, path: &str) -> Result<ScalarRange, ModelError> {
        let bad = || self.err(path, "a scalar range is `{\"start\": E, \"dims\": [[size, stride], ...]}`");
        let start = self.expr(v.get("start").ok_or_else(bad)?, path)?;
        let dims = v
            .get("dims")
            .and_then(Value::as_array)
            .ok_or_else(bad)?
            .iter()
            .map(|d| match d.as_array().map(Vec::as_slice) {
                Some([size, stride]) => Ok((size.as_u64().ok_or_else(bad)? as usize, stride.as_i64().ok_or_else(bad)?)),
                _ => Err(bad()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let count = match v.get("count") {
            None | Some(Value::Null) => None,
            Some(c) => Some(self.expr(c, path)?),
        };
        Ok(ScalarRange { start, dims, count })
    }

    fn scalar_id(&self, v: &Value, path: &str) -> Result<usize, ModelError> {
        let id = as_u64(v, self.kernel, path)? as usize;
        if id >= self.n_scalars {
            return Err(self.err(path, format!("scalar array #{id} is not declared")));
        }
        Ok(id)
    }

    fn sem_id(&self, v: &Value, path: &str) -> Result<SemId, ModelError> {
        let id = as_u64(v, self.kernel, path)? as usize;
        if id >= self.n_sems {
            return Err(self.err(path, format!("semaphore #{id} is not declared")));
        }
        Ok(SemId(id as u32))
    }

    fn sem_ref(&self, v: &Value, path: &str) -> Result<SemRef, ModelError> {
        let sem = self.sem_id(field(v, "sem", self.kernel, path)?, path)?;
        let index = match v.get("index") {
            None | Some(Value::Null) => None,
            Some(e) => Some(self.expr(e, path)?),
        };
        Ok(SemRef { sem, index })
    }

    fn view(&self, v: &Value, path: &str) -> Result<RefExpr, ModelError> {
        let k = self.kernel;
        let b = as_u64(field(v, "buffer", k, path)?, k, path)? as usize;
        if b >= self.n_buffers {
            return Err(self.err(path, format!("buffer #{b} is not declared")));
        }
        let buffer = BufferId(b as u32);
        if let Some(why) = v.get("unaligned") {
            let why = as_str(why, k, path)?;
            let fail = Expr::Fail(format!("this view does not fit the cells the front end chose: {why}"));
            return Ok(RefExpr { buffer, indexing: vec![Level::Index(vec![Index::At(fail)])] });
        }
        let mut indexing = Vec::new();
        let indices = self.indices(field(v, "indices", k, path)?, path)?;
        if !indices.is_empty() {
            indexing.push(Level::Index(indices));
        }
        // After a reshape: reshapes and further indexing, in order.
        for stage in v.get("stages").map(|s| as_array(s, k, path)).transpose()?.into_iter().flatten() {
            if let Some(shape) = stage.get("reshape") {
                let sizes = as_array(shape, k, path)?.iter().map(|n| Ok(as_u64(n, k, path)? as usize));
                indexing.push(Level::Reshape(sizes.collect::<Result<_, ModelError>>()?));
            } else {
                indexing.push(Level::Index(self.indices(field(stage, "indices", k, path)?, path)?));
            }
        }
        Ok(RefExpr { buffer, indexing })
    }

    fn indices(&self, v: &Value, path: &str) -> Result<Vec<Index>, ModelError> {
        let k = self.kernel;
        let mut indices = Vec::new();
        for ix in as_array(v, k, path)? {
            if let Some(at) = ix.get("at") {
                indices.push(Index::At(self.expr(at, path)?));
            } else if let Some(sl) = ix.get("slice") {
                // A constant, or (a slice of dynamic size) an expression.
                let size = match field(sl, "size", k, path)? {
                    Value::Number(_) => Expr::Const(as_u64(&sl["size"], k, path)? as i64),
                    e => self.expr(e, path)?,
                };
                let step = match sl.get("step") {
                    None => 1,
                    Some(n) => as_u64(n, k, path)? as usize,
                };
                if step == 0 {
                    return Err(self.err(path, "a slice has step 0"));
                }
                indices.push(Index::Slice { start: self.expr(field(sl, "start", k, path)?, path)?, size, step });
            } else {
                return Err(self.err(path, "an index is neither `at` nor `slice`"));
            }
        }
        Ok(indices)
    }

    fn dest(&self, v: &Value, path: &str) -> Result<Dest, ModelError> {
        let k = self.kernel;
        Ok(match as_str(field(v, "kind", k, path)?, k, path)? {
            "own" => Dest::Own,
            "mesh" => Dest::Mesh(
                as_array(field(v, "coords", k, path)?, k, path)?
                    .iter()
                    .map(|e| self.expr(e, path))
                    .collect::<Result<_, _>>()?,
            ),
            "axes" => Dest::Axes(
                as_array(field(v, "axes", k, path)?, k, path)?
                    .iter()
                    .map(|a| {
                        Ok((
                            as_str(field(a, "axis", k, path)?, k, path)?.to_string(),
                            self.expr(field(a, "index", k, path)?, path)?,
                        ))
                    })
                    .collect::<Result<_, ModelError>>()?,
            ),
            "logical" => Dest::Logical(self.expr(field(v, "id", k, path)?, path)?),
            other => return Err(self.err(path, format!("unknown device id kind `{other}`"))),
        })
    }

    fn dma(&self, v: &Value, path: &str) -> Result<DmaDesc, ModelError> {
        let k = self.kernel;
        let src = self.view(field(v, "src", k, path)?, path)?;
        let dst = self.view(field(v, "dst", k, path)?, path)?;
        Ok(match as_str(field(v, "kind", k, path)?, k, path)? {
            "local" => DmaDesc::Local { src, dst, sem: self.sem_ref(field(v, "sem", k, path)?, path)? },
            "remote" => DmaDesc::Remote {
                src,
                dst,
                send_sem: self.sem_ref(field(v, "send_sem", k, path)?, path)?,
                recv_sem: self.sem_ref(field(v, "recv_sem", k, path)?, path)?,
                device: self.dest(field(v, "device", k, path)?, path)?,
            },
            other => return Err(self.err(path, format!("unknown DMA kind `{other}`"))),
        })
    }

    fn data(&self, v: &Value, path: &str) -> Result<Data, ModelError> {
        let k = self.kernel;
        Ok(match as_str(field(v, "kind", k, path)?, k, path)? {
            "zeros" => Data::Zeros,
            "load" => Data::Load(self.view(field(v, "view", k, path)?, path)?),
            "add" => {
                let args = as_array(field(v, "args", k, path)?, k, path)?;
                let [a, b] = args.as_slice() else { return Err(self.err(path, "`add` takes two arguments")) };
                Data::Add(Box::new(self.data(a, path)?), Box::new(self.data(b, path)?))
            }
            "fn" => Data::Apply {
                func: as_str(field(v, "name", k, path)?, k, path)?.to_string(),
                args: as_array(field(v, "args", k, path)?, k, path)?
                    .iter()
                    .map(|a| self.data(a, path))
                    .collect::<Result<_, _>>()?,
            },
            "const" => Data::Const(as_str(field(v, "name", k, path)?, k, path)?.to_string()),
            "index" => Data::Index(self.expr(field(v, "expr", k, path)?, path)?),
            other => return Err(self.err(path, format!("unknown value kind `{other}`"))),
        })
    }

    fn expr(&self, v: &Value, path: &str) -> Result<Expr, ModelError> {
        let k = self.kernel;
        let obj = v.as_object().ok_or_else(|| self.err(path, format!("expected an expression, found {v}")))?;
        if let Some(c) = obj.get("const") {
            return c.as_i64().map(Expr::Const).ok_or_else(|| self.err(path, "`const` must be an integer"));
        }
        if let Some(a) = obj.get("axis_index") {
            return Ok(Expr::AxisIndex(as_str(a, k, path)?.to_string()));
        }
        if let Some(d) = obj.get("program_id") {
            return Ok(Expr::ProgramId(as_u64(d, k, path)? as usize));
        }
        if let Some(d) = obj.get("num_programs") {
            return Ok(Expr::NumPrograms(as_u64(d, k, path)? as usize));
        }
        if let Some(n) = obj.get("var") {
            return Ok(Expr::Var(as_str(n, k, path)?.to_string()));
        }
        let op = as_str(field(v, "op", k, path)?, k, path)?;
        let args = as_array(field(v, "args", k, path)?, k, path)?
            .iter()
            .map(|a| self.expr(a, path))
            .collect::<Result<Vec<_>, _>>()?;
        let arity = |n: usize, got: usize| -> Result<(), ModelError> {
            if got == n {
                Ok(())
            } else {
                Err(self.err(path, format!("`{op}` takes {n} argument(s), not {got}")))
            }
        };
        let unary = |f: fn(Box<Expr>) -> Expr, mut args: Vec<Expr>| -> Result<Expr, ModelError> {
            arity(1, args.len())?;
            Ok(f(Box::new(args.remove(0))))
        };
        let bin = match op {
            "add" => Some(BinOp::Add),
            "sub" => Some(BinOp::Sub),
            "mul" => Some(BinOp::Mul),
            "div" => Some(BinOp::Div),
            "rem" => Some(BinOp::Rem),
            "exactdiv" => Some(BinOp::ExactDiv),
            "min" => Some(BinOp::Min),
            "max" => Some(BinOp::Max),
            "eq" => Some(BinOp::Eq),
            "ne" => Some(BinOp::Ne),
            "lt" => Some(BinOp::Lt),
            "le" => Some(BinOp::Le),
            "gt" => Some(BinOp::Gt),
            "ge" => Some(BinOp::Ge),
            "and" => Some(BinOp::And),
            "or" => Some(BinOp::Or),
            "xor" => Some(BinOp::Xor),
            "bitand" => Some(BinOp::BitAnd),
            "bitor" => Some(BinOp::BitOr),
            "bitxor" => Some(BinOp::BitXor),
            "shl" => Some(BinOp::Shl),
            "shr" => Some(BinOp::Shr),
            _ => None,
        };
        if let Some(b) = bin {
            arity(2, args.len())?;
            let mut it = args.into_iter();
            let (x, y) = (it.next().expect("two"), it.next().expect("two"));
            return Ok(Expr::Binary(b, Box::new(x), Box::new(y)));
        }
        match op {
            "neg" => unary(Expr::Neg, args),
            "not" => unary(Expr::Not, args),
            "sign" => unary(Expr::Sign, args),
            "abs" => unary(Expr::Abs, args),
            "bitnot" => unary(Expr::BitNot, args),
            "select_n" => {
                if args.len() < 2 {
                    return Err(self.err(path, "`select_n` needs an index and at least one case"));
                }
                let mut it = args.into_iter();
                let which = it.next().expect("checked");
                Ok(Expr::Select(Box::new(which), it.collect()))
            }
            "in_range" => {
                arity(3, args.len())?;
                let mut it = args.into_iter();
                let index = it.next().expect("three");
                match (it.next(), it.next()) {
                    (Some(Expr::Const(size)), Some(Expr::Const(dim))) if size > 0 && dim >= 0 => {
                        Ok(Expr::InRange(Box::new(index), size, dim as usize))
                    }
                    _ => Err(self.err(path, "`in_range` takes an index, a constant size and a constant dimension")),
                }
            }
            other => Err(self.err(path, format!("unknown operator `{other}`"))),
        }
    }
}
