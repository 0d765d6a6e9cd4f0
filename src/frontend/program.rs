//! A program of several kernels of the document (`programs` of `python/SCHEMA.md`) -> one
//! IR kernel whose body is a [`Launch`] per kernel, in the order every device runs them.
//!
//! The kernels' declarations are merged: an argument a link ties to an earlier kernel's
//! argument (a semaphore the earlier kernel hands out, a buffer it wrote, an array passed to
//! both) is the earlier one's buffer or semaphore; everything else (scratch, arrays of the
//! kernel alone) gets a declaration of its own, its name suffixed `#2`, `#3` when an
//! earlier kernel already uses the name. The barrier semaphores of launches with one
//! `collective_id` are one semaphore. A merged buffer holds input values at the program's
//! entry when its first kernel reads it as an input, and is checked at the program's exit
//! when some kernel writes it as an output. A semaphore a kernel takes as a
//! `pltpu.SEMAPHORE`-space output (or as an input it hands back out) is one the launch
//! hands out: it lives on until the last later launch that takes it, or to the program's
//! end.

use std::collections::HashMap;

use serde_json::Value;

use semcheck_model::ir::{BufferDecl, BufferId, BufferRole, Kernel, Launch, SemDecl, SemId, SemKind, Stmt, StmtKind};
use semcheck_model::remap::{remap, IdMap};
use semcheck_model::{ErrorKind, ModelError};

use super::document::{KernelDoc, ProgramDoc};
use super::import::Imported;

/// What a kernel argument was declared as (`arguments` of a kernel record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    Buffer(usize),
    Sem(usize),
}

fn malformed(program: &str, what: impl std::fmt::Display) -> ModelError {
    ModelError::new(ErrorKind::BadDeclaration, format!("program {program}: malformed document: {what}"))
}

/// The `arguments` of a kernel record: per kernel argument, its buffer or semaphore.
fn arguments(program: &str, k: &KernelDoc) -> Result<Vec<Option<Arg>>, ModelError> {
    let Some(list) = k.rest.get("arguments") else {
        return Err(malformed(program, format!("kernel {} has no `arguments`", k.name)));
    };
    let list =
        list.as_array().ok_or_else(|| malformed(program, format!("kernel {}: `arguments` is not an array", k.name)))?;
    list.iter()
        .map(|a| match a {
            Value::Null => Ok(None),
            v => match (v.get("buffer").and_then(Value::as_u64), v.get("semaphore").and_then(Value::as_u64)) {
                (Some(b), None) => Ok(Some(Arg::Buffer(b as usize))),
                (None, Some(s)) => Ok(Some(Arg::Sem(s as usize))),
                _ => Err(malformed(program, format!("kernel {}: an argument is `{v}`", k.name))),
            },
        })
        .collect()
}

/// The `role` of each semaphore of a kernel record (`scratch` when absent).
fn semaphore_roles(k: &KernelDoc) -> Vec<String> {
    k.rest
        .get("semaphores")
        .and_then(Value::as_array)
        .map(|all| all.iter().map(|s| s.get("role").and_then(Value::as_str).unwrap_or("scratch").to_string()).collect())
        .unwrap_or_default()
}

/// A merged buffer: its declaration and how its kernels use it.
struct Merged {
    decl: BufferDecl,
    /// Whether some kernel writes it as an output.
    written: bool,
}

/// `name`, or `name#2`, `name#3`... : the first not in `taken`.
fn unique(name: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(name) {
        return name.to_string();
    }
    (2..).map(|n| format!("{name}#{n}")).find(|n| !taken(n)).expect("a free name")
}

/// The program's kernel: `steps[i]` is the document's record of the program's kernel `i`
/// and `kernels[i]` its import.
pub fn merge(program: &ProgramDoc, steps: &[&KernelDoc], kernels: Vec<Imported>) -> Result<Imported, ModelError> {
    let pname = program.name.as_str();
    let first = kernels.first().ok_or_else(|| malformed(pname, "a program of no kernels"))?;
    let (mesh, mesh_kind) = (first.mesh.clone(), first.mesh_kind.clone());
    let mut buffers: Vec<Merged> = Vec::new();
    let mut sems: Vec<SemDecl> = Vec::new();
    let mut scalars = Vec::new();
    let mut barriers: HashMap<Option<u32>, SemId> = HashMap::new();
    // The merged buffer or semaphore of each (step, argument).
    let mut objects: HashMap<(usize, usize), Arg> = HashMap::new();
    let mut launches = Vec::new();
    let mut barrier_expected = Vec::new();
    let mut launch_names: Vec<String> = Vec::new();
    for (step, (doc, imp)) in steps.iter().zip(kernels).enumerate() {
        let kname = doc.name.as_str();
        if imp.mesh != mesh {
            return Err(ModelError::new(
                ErrorKind::Unsupported,
                format!(
                    "program {pname}: kernel {kname} runs on the mesh {} and kernel {} on {}: the kernels of one program run on one mesh",
                    imp.mesh, steps[0].name, mesh
                ),
            ));
        }
        let args = arguments(pname, doc)?;
        let roles = semaphore_roles(doc);
        let mut k = imp.kernel;
        let mut bmap: Vec<Option<BufferId>> = vec![None; k.buffers.len()];
        let mut smap: Vec<Option<SemId>> = vec![None; k.semaphores.len()];
        for link in program.links.iter().filter(|l| l.to.0 == step) {
            let Some(&from) = objects.get(&link.from) else { continue };
            let Some(&Some(to)) = args.get(link.to.1) else { continue };
            match (to, from) {
                (Arg::Buffer(b), Arg::Buffer(m)) => {
                    let slot =
                        bmap.get_mut(b).ok_or_else(|| malformed(pname, format!("kernel {kname}: buffer #{b}")))?;
                    if slot.is_some_and(|s| s.0 as usize != m) {
                        return Err(ModelError::new(
                            ErrorKind::Unsupported,
                            format!(
                                "program {pname}: kernel {kname} reads `{}` as two arrays of the program (`{}` and `{}`)",
                                k.buffers[b].name,
                                buffers[slot.expect("set").0 as usize].decl.name,
                                buffers[m].decl.name
                            ),
                        ));
                    }
                    *slot = Some(BufferId(m as u32));
                }
                (Arg::Sem(s), Arg::Sem(m)) => {
                    let slot =
                        smap.get_mut(s).ok_or_else(|| malformed(pname, format!("kernel {kname}: semaphore #{s}")))?;
                    *slot = Some(SemId(m as u32));
                }
                _ => {
                    return Err(malformed(
                        pname,
                        format!("a link ties a buffer to a semaphore (step {} argument {})", link.to.0, link.to.1),
                    ))
                }
            }
        }
        for (b, decl) in k.buffers.iter().enumerate() {
            let role = decl.role;
            match bmap[b] {
                Some(m) => {
                    let merged = &mut buffers[m.0 as usize];
                    let same = merged.decl.space == decl.space
                        && merged.decl.shape == decl.shape
                        && merged.decl.cell_bytes == decl.cell_bytes
                        && merged.decl.shared == decl.shared;
                    if !same {
                        return Err(ModelError::new(
                            ErrorKind::Unsupported,
                            format!(
                                "program {pname}: kernel {kname} takes `{}` as `{}` with cells {:?} of {} bytes in {:?}, the program's earlier kernels have cells {:?} of {} bytes in {:?}: the kernels of a program must cut a shared array alike",
                                merged.decl.name, decl.name, decl.shape, decl.cell_bytes, decl.space,
                                merged.decl.shape, merged.decl.cell_bytes, merged.decl.space
                            ),
                        ));
                    }
                    merged.written |= role.is_output();
                }
                None => {
                    let name = unique(&decl.name, |n| buffers.iter().any(|m| m.decl.name == n));
                    bmap[b] = Some(BufferId(buffers.len() as u32));
                    buffers.push(Merged { decl: BufferDecl { name, ..decl.clone() }, written: role.is_output() });
                }
            }
        }
        for (s, decl) in k.semaphores.iter().enumerate() {
            if smap[s].is_some() {
                continue;
            }
            if decl.kind == SemKind::Barrier {
                if let Some(&m) = barriers.get(&k.collective_id) {
                    smap[s] = Some(m);
                    continue;
                }
            }
            let name = unique(&decl.name, |n| sems.iter().any(|d| d.name == n));
            let id = SemId(sems.len() as u32);
            if decl.kind == SemKind::Barrier {
                barriers.insert(k.collective_id, id);
            }
            smap[s] = Some(id);
            sems.push(SemDecl { name, ..decl.clone() });
        }
        for (i, a) in args.iter().enumerate() {
            match a {
                Some(Arg::Buffer(b)) => {
                    if let Some(Some(m)) = bmap.get(*b) {
                        objects.insert((step, i), Arg::Buffer(m.0 as usize));
                    }
                }
                Some(Arg::Sem(s)) => {
                    if let Some(Some(m)) = smap.get(*s) {
                        objects.insert((step, i), Arg::Sem(m.0 as usize));
                    }
                }
                None => {}
            }
        }
        let map = IdMap {
            buffers: bmap.iter().map(|b| b.expect("every buffer mapped")).collect(),
            semaphores: smap.iter().map(|s| s.expect("every semaphore mapped")).collect(),
            scalars: (0..k.scalars.len()).map(|i| scalars.len() + i).collect(),
        };
        scalars.append(&mut k.scalars);
        remap(&mut k.body, &map);
        let mut taken: Vec<SemId> = map.semaphores.clone();
        taken.sort();
        taken.dedup();
        let mut hands_out: Vec<SemId> = roles
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r.as_str(), "output" | "input_output"))
            .filter_map(|(s, _)| map.semaphores.get(s).copied())
            .collect();
        hands_out.sort();
        hands_out.dedup();
        let name = unique(kname, |n| launch_names.iter().any(|l| l == n));
        launch_names.push(name.clone());
        barrier_expected.push((name.clone(), imp.implicit_entry_barrier));
        launches.push(Launch {
            name,
            grid: k.grid,
            collective_id: k.collective_id,
            skip_device_barrier: k.skip_device_barrier,
            allow_collective_id_without_custom_barrier: k.allow_collective_id_without_custom_barrier,
            semaphores: taken,
            hands_out,
            body: k.body,
        });
    }
    let buffers = buffers
        .into_iter()
        .map(|m| {
            let role = match (m.decl.role, m.written) {
                (BufferRole::Input | BufferRole::InputOutput, true) => BufferRole::InputOutput,
                (BufferRole::Input | BufferRole::InputOutput, false) => BufferRole::Input,
                (role, _) => role,
            };
            BufferDecl { role, ..m.decl }
        })
        .collect();
    let kernel = Kernel {
        name: pname.to_string(),
        grid: Vec::new(),
        buffers,
        semaphores: sems,
        scalars,
        collective_id: None,
        skip_device_barrier: false,
        allow_collective_id_without_custom_barrier: false,
        body: launches
            .into_iter()
            .map(|l| Stmt { kind: StmtKind::Launch(Box::new(l)), loc: None, implicit: false })
            .collect(),
    };
    for (l, (name, expected)) in kernel.launches().iter().zip(&barrier_expected) {
        if l.implicit_entry_barrier(&kernel) != *expected {
            return Err(ModelError::new(
                ErrorKind::BadDeclaration,
                format!(
                    "kernel {name} of program {pname}: the front end and the checker disagree on JAX's implicit entry barrier ({expected} vs {}); this is a semcheck bug",
                    !expected
                ),
            ));
        }
    }
    Ok(Imported { kernel, mesh, mesh_kind, implicit_entry_barrier: false })
}
