//! The happens-before graph of a counterexample, built with petgraph: program order,
//! signal -> wait, DMA start -> sent/received/done -> wait; for a deadlock, the wait-for
//! graph of the stuck state with its cycle or its missing signal marked.

use petgraph::algo::tarjan_scc;
use petgraph::dot::{Config, Dot};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use semcheck_model::program::Op;
use semcheck_model::Program;

use crate::counterexample::causes::{causes, Why};
use crate::counterexample::names::Namer;
use crate::counterexample::run::{Ending, TracedRun};

/// What a node stands for.
#[derive(Clone, Debug)]
enum Node {
    /// An event of the trace; `true` if it breaks the rule.
    Event(String, bool),
    /// A device stuck at the end of a deadlocked trace.
    Blocked(String),
    /// A semaphore no remaining operation increments.
    Missing(String),
    /// The broken rule.
    Violation(String),
}

/// Why one node must come before (or waits for) another.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Edge {
    Program,
    Dma,
    Sem(String),
    Barrier,
    WaitsFor(String, bool),
    Breaks,
}

/// Builds the graph.
fn graph(program: &Program, run: &TracedRun) -> DiGraph<Node, Edge> {
    let namer = Namer::new(program);
    let mut g = DiGraph::new();
    let causes = causes(program, run);
    for (i, name) in run.names.iter().enumerate() {
        let breaks = matches!(&run.ending, Ending::Violation { at, .. } if *at == i);
        let node = g.add_node(Node::Event(format!("{}. {name}", i + 1), breaks));
        for c in &causes.of[i] {
            let edge = match c.why {
                Why::Program => Edge::Program,
                Why::Dma => Edge::Dma,
                Why::Sem(slot) => Edge::Sem(program.sem_name(slot)),
                Why::Barrier => Edge::Barrier,
            };
            g.add_edge(NodeIndex::new(c.from), node, edge);
        }
    }
    match &run.ending {
        Ending::Violation { at, violation } => {
            let v = g.add_node(Node::Violation(format!("VIOLATION {violation}")));
            g.add_edge(NodeIndex::new(*at), v, Edge::Breaks);
        }
        Ending::Deadlock(violation) => {
            g.add_node(Node::Violation(format!("VIOLATION {violation}")));
            wait_for(program, &namer, run.states.last().expect("a final state"), &mut g);
        }
        Ending::Clean => {}
    }
    g
}

/// Adds the wait-for graph of the stuck `state`.
fn wait_for(program: &Program, namer: &Namer<'_>, state: &[u32], g: &mut DiGraph<Node, Edge>) {
    let mut blocked: Vec<Option<NodeIndex>> = vec![None; program.num_devices()];
    for d in program.mesh.devices() {
        let pc = program.pc(state, d);
        if (pc as usize) < program.devices[d.index()].len() {
            blocked[d.index()] = Some(g.add_node(Node::Blocked(format!("{} is stuck at {}", d, namer.op(d, pc)))));
        }
    }
    let mut edges = Vec::new();
    for d in program.mesh.devices() {
        let Some(from) = blocked[d.index()] else { continue };
        let pc = program.pc(state, d);
        match program.devices[d.index()].ops[pc as usize] {
            Op::Wait { sem, amount } => {
                let mut any = false;
                for e in program.mesh.devices() {
                    let dp = &program.devices[e.index()];
                    let hit = (program.pc(state, e)..dp.len() as u32).find(|&q| match dp.ops[q as usize] {
                        Op::Signal { sem: s, .. } | Op::LocalDma { sem: s, .. } => s == sem,
                        Op::RemoteDma { send_sem, recv_sem, .. } => send_sem == sem || recv_sem == sem,
                        _ => false,
                    });
                    if let (Some(q), Some(to)) = (hit, blocked[e.index()]) {
                        any = true;
                        edges.push((
                            from,
                            to,
                            format!("{} >= {amount} (from {})", program.sem_full_name(sem), namer.op(e, q)),
                        ));
                    }
                }
                if !any {
                    let missing = g.add_node(Node::Missing(format!(
                        "missing signal: no remaining operation increments {} (it is {}, needs {amount})",
                        program.sem_full_name(sem),
                        program.sem_value(state, sem)
                    )));
                    g.add_edge(from, missing, Edge::WaitsFor(program.sem_full_name(sem), true));
                }
            }
            Op::EntryBarrier => {
                for e in program.mesh.devices().filter(|&e| e != d) {
                    if let Some(to) = blocked[e.index()] {
                        edges.push((from, to, "entry".to_string()));
                    }
                }
            }
            _ => {}
        }
    }
    for (a, b, label) in edges {
        g.add_edge(a, b, Edge::WaitsFor(label, false));
    }
    // Mark the wait-for cycles.
    for scc in tarjan_scc(&*g) {
        let cyclic = scc.len() > 1 || scc.iter().any(|&n| g.find_edge(n, n).is_some());
        if !cyclic {
            continue;
        }
        let ids: Vec<_> = g
            .edge_references()
            .filter(|e| scc.contains(&e.source()) && scc.contains(&e.target()))
            .map(|e| e.id())
            .collect();
        for id in ids {
            if let Some(Edge::WaitsFor(_, on_cycle)) = g.edge_weight_mut(id) {
                *on_cycle = true;
            }
        }
    }
}

fn quote(s: &str) -> String {
    let s = s.replace('\\', "\\\\").replace('"', "\\\"");
    super::wrap(&s, 48).join("\\n")
}

/// The graph in Graphviz DOT.
pub fn dot(program: &Program, run: &TracedRun) -> String {
    let g = graph(program, run);
    let node_attr = |_, (_, n): (NodeIndex, &Node)| match n {
        Node::Event(label, true) => {
            format!("label=\"{}\", shape=box, style=filled, fillcolor=\"#ffb0b0\", color=red", quote(label))
        }
        Node::Event(label, false) => format!("label=\"{}\", shape=box", quote(label)),
        Node::Blocked(label) => format!("label=\"{}\", shape=octagon, color=red", quote(label)),
        Node::Missing(label) | Node::Violation(label) => {
            format!("label=\"{}\", shape=note, style=filled, fillcolor=\"#ffb0b0\", color=red", quote(label))
        }
    };
    let edge_attr = |_, e: petgraph::graph::EdgeReference<'_, Edge>| match e.weight() {
        Edge::Program => "color=black".to_string(),
        Edge::Dma => "color=darkgreen, style=dashed, label=\"dma\"".to_string(),
        Edge::Sem(s) => format!("color=blue, label=\"{}\"", quote(s)),
        Edge::Barrier => "color=gray, label=\"entry\"".to_string(),
        Edge::WaitsFor(s, true) => format!("color=red, penwidth=2, label=\"waits for {}\"", quote(s)),
        Edge::WaitsFor(s, false) => format!("color=orange, label=\"waits for {}\"", quote(s)),
        Edge::Breaks => "color=red, penwidth=2".to_string(),
    };
    format!("{:?}", Dot::with_attr_getters(&g, &[Config::NodeNoLabel, Config::EdgeNoLabel], &edge_attr, &node_attr))
}

#[cfg(test)]
mod tests {
    use semcheck_model::dsl::trace;
    use semcheck_model::{compile, Mesh, Rule, Spec};

    use super::*;
    use crate::counterexample::{counterexample, Found};
    use crate::{explore, Config, Verdict};

    /// A 2-ring kernel: each device waits on `first` before signalling its right
    /// neighbour's `first` (a wait-for cycle), or waits on `never` which nobody signals.
    fn deadlock(cycle: bool) -> (Program, Found) {
        let kernel = trace("stuck", |k| {
            k.grid(&[1]);
            let first = k.regular_semaphore("first");
            let never = k.regular_semaphore("never");
            let right = (k.axis_index("x") + 1) % 2;
            if cycle {
                k.semaphore_wait(&first, 1);
                k.semaphore_signal(&first, 1, right);
            } else {
                k.semaphore_wait(&never, 1);
            }
        })
        .unwrap();
        let program = compile(&kernel, &Mesh::ring(2).unwrap(), &Spec::plain(vec![]), 1).unwrap();
        let Verdict::Violation(cex) = explore(&program, &Config::default()).verdict else { panic!("no deadlock") };
        assert_eq!(cex.violation.rule, Rule::Deadlock);
        let found = counterexample(&program, &cex, true).unwrap();
        (program, found)
    }

    #[test]
    fn a_wait_for_cycle_is_marked() {
        let (program, found) = deadlock(true);
        assert!(matches!(found.run.ending, Ending::Deadlock(_)));
        let g = graph(&program, &found.run);
        let on_cycle = g.edge_weights().filter(|e| matches!(e, Edge::WaitsFor(_, true))).count();
        assert_eq!(on_cycle, 2, "d0 waits for d1 and d1 for d0");
        assert!(dot(&program, &found.run).contains("penwidth=2, label=\"waits for d0 first"));
    }

    #[test]
    fn a_missing_signal_is_marked() {
        let (program, found) = deadlock(false);
        let g = graph(&program, &found.run);
        let missing: Vec<_> = g.node_weights().filter(|n| matches!(n, Node::Missing(_))).collect();
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(dot(&program, &found.run).contains("missing signal: no remaining"));
    }
}
