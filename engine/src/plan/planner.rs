//! Validation of a job spec and its expansion into a plan.

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    CheckpointSettings, DEAD_LETTER_OUTPUT, EdgeSpec, JobSpec, MIN_CHANNEL_CAPACITY_BYTES, NodeKind,
    NodeSpec, Partitioning, PlanError, Settings,
};
use crate::connectors::{SinkConfig, SourceConfig};
use crate::guest::OperatorModule;

/// Resolves the `module` reference of an operator node to a compiled module.
pub trait ModuleLoader {
    /// Loads (or fetches from a cache) the module named by `reference`.
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError>;
}

/// Why a loader could not load a module: its own error type, whose message the plan
/// error carries.
pub type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// What a node runs.
#[derive(Clone)]
pub enum NodeBody {
    /// A source connector.
    Source(SourceConfig),
    /// A Wasm operator with its configuration as JSON text.
    Operator {
        /// The compiled module.
        module: Arc<OperatorModule>,
        /// The node's `config` object as JSON text.
        config: String,
    },
    /// A sink connector.
    Sink(SinkConfig),
}

impl std::fmt::Debug for NodeBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeBody::Source(c) => write!(f, "Source({c:?})"),
            NodeBody::Operator { module, .. } => write!(f, "Operator({})", module.name()),
            NodeBody::Sink(c) => write!(f, "Sink({c:?})"),
        }
    }
}

/// An edge of the plan, between node indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanEdge {
    /// Index of the upstream node.
    pub from: usize,
    /// Index of the downstream node.
    pub to: usize,
    /// The partitioning.
    pub partitioning: Partitioning,
    /// The downstream input index (port) this edge feeds: its position among the
    /// downstream node's inputs, in spec order.
    pub port: u32,
    /// The upstream output it carries: `None` for the main output, else an index into the
    /// upstream node's [`PlanNode::side_outputs`].
    pub output: Option<u8>,
}

/// A validated node.
#[derive(Debug, Clone)]
pub struct PlanNode {
    /// The node id.
    pub id: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// Number of subtasks.
    pub parallelism: u32,
    /// Incoming edges, by port.
    pub inputs: Vec<PlanEdge>,
    /// Outgoing edges.
    pub outputs: Vec<PlanEdge>,
    /// The names of the side outputs its outgoing edges carry (see [`PlanEdge::output`]).
    pub side_outputs: Vec<String>,
    /// What the node runs.
    pub body: NodeBody,
}

/// A validated job, ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The spec it was made from.
    pub spec: JobSpec,
    /// The nodes, in spec order.
    pub nodes: Vec<PlanNode>,
    /// Node indices in topological order (sources first).
    pub topo_order: Vec<usize>,
}

impl Plan {
    /// Total number of subtasks.
    /// (Saturating: a spec of many wide nodes cannot wrap it around to a small number and
    /// slip past a quota.)
    pub fn subtask_count(&self) -> u32 {
        self.nodes.iter().fold(0u32, |sum, n| sum.saturating_add(n.parallelism))
    }
}

/// The longest wall-time limit a spec may ask for. Without a bound, a huge value would
/// switch the limit off (no deadline fits in a clock) and a waiting guest would hold its
/// subtask forever.
pub const MAX_WALL_LIMIT_MS: u64 = 3_600_000;

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The most input ports a node may name.
pub const MAX_INPUT_PORTS: usize = 16;

/// Checks the names of a node's input ports: only operators name them, at most
/// [`MAX_INPUT_PORTS`], each a valid id, no name twice.
fn check_input_names(n: &NodeSpec) -> Result<(), PlanError> {
    let Some(names) = &n.inputs else { return Ok(()) };
    let problem = |problem: String| Err(PlanError::Inputs { node: n.id.clone(), problem });
    if n.kind != NodeKind::Operator {
        return problem("only operators name their inputs".into());
    }
    if names.is_empty() || names.len() > MAX_INPUT_PORTS {
        return problem(format!("`inputs` must name 1 to {MAX_INPUT_PORTS} ports, got {}", names.len()));
    }
    for (i, name) in names.iter().enumerate() {
        if !valid_id(name) {
            return problem(format!(
                "input name `{}` is not 1 to 64 characters of A-Z a-z 0-9 _ -",
                name.chars().take(64).collect::<String>()
            ));
        }
        if names[..i].contains(name) {
            return problem(format!("input `{name}` is named twice"));
        }
    }
    Ok(())
}

/// The most side outputs of one operator that edges may carry (the guest's own limit).
pub const MAX_SIDE_OUTPUTS: usize = 16;

/// Every node's edges, by node index.
struct Wiring {
    /// Incoming edges, in port order.
    inputs: Vec<Vec<PlanEdge>>,
    /// Outgoing edges.
    outputs: Vec<Vec<PlanEdge>>,
    /// Names of the side outputs the outgoing edges carry.
    side_outputs: Vec<Vec<String>>,
}

/// Each node's incoming edges (in port order) and outgoing edges, from the spec's edges: ports
/// by name where the downstream node names its inputs, else by spec order.
fn wire_edges(spec: &JobSpec, index: &HashMap<&str, usize>) -> Result<Wiring, PlanError> {
    for n in &spec.nodes {
        check_input_names(n)?;
    }
    let mut inputs: Vec<Vec<PlanEdge>> = vec![Vec::new(); spec.nodes.len()];
    let mut outputs: Vec<Vec<PlanEdge>> = vec![Vec::new(); spec.nodes.len()];
    let mut side_outputs: Vec<Vec<String>> = vec![Vec::new(); spec.nodes.len()];
    let mut seen_edges = std::collections::HashSet::new();
    for e in &spec.edges {
        // Each listing of an edge builds its channels again (p × p of them): a hostile spec
        // could multiply them by listing one edge many times.
        let edge_key = (e.from.as_str(), e.to.as_str(), e.input.as_deref(), e.output.as_deref());
        if !seen_edges.insert(edge_key) {
            return Err(PlanError::DuplicateEdge { from: e.from.clone(), to: e.to.clone() });
        }
        let lookup = |id: &str| {
            index.get(id).copied().ok_or_else(|| PlanError::UnknownNode {
                from: e.from.clone(),
                to: e.to.clone(),
                missing: id.to_string(),
            })
        };
        let (from, to) = (lookup(&e.from)?, lookup(&e.to)?);
        let (fp, tp) = (spec.nodes[from].parallelism, spec.nodes[to].parallelism);
        let partitioning =
            e.partitioning.unwrap_or(if fp == tp { Partitioning::Forward } else { Partitioning::Rebalance });
        if partitioning == Partitioning::Forward && fp != tp {
            return Err(PlanError::ForwardParallelism {
                from: e.from.clone(),
                to: e.to.clone(),
                from_p: fp,
                to_p: tp,
            });
        }
        let port = input_port(spec, e, to, inputs[to].len())?;
        if spec.nodes[to].inputs.is_some() && inputs[to].iter().any(|i: &PlanEdge| i.port == port) {
            // Channel state and watermarks are kept per (port, upstream subtask).
            return Err(PlanError::Inputs {
                node: e.to.clone(),
                problem: format!(
                    "input `{}` has more than one incoming edge",
                    e.input.as_deref().unwrap_or("")
                ),
            });
        }
        let output = match &e.output {
            None => None,
            Some(name) => Some(side_output_index(spec, from, name, &mut side_outputs[from])?),
        };
        let edge = PlanEdge { from, to, partitioning, port, output };
        inputs[to].push(edge);
        outputs[from].push(edge);
    }
    for (i, n) in spec.nodes.iter().enumerate() {
        if let Some(names) = &n.inputs
            && let Some(missing) =
                names.iter().enumerate().find(|(p, _)| !inputs[i].iter().any(|e| e.port == *p as u32))
        {
            return Err(PlanError::Inputs {
                node: n.id.clone(),
                problem: format!("input `{}` has no incoming edge", missing.1),
            });
        }
        // In port order: the runtime wires gates and channel state by port.
        inputs[i].sort_by_key(|e| e.port);
    }
    Ok(Wiring { inputs, outputs, side_outputs })
}

/// The input port of node `to` that edge `e` feeds: by name where the node names its
/// inputs (then the edge must name one of them), else the next in spec order (`next`).
fn input_port(spec: &JobSpec, e: &EdgeSpec, to: usize, next: usize) -> Result<u32, PlanError> {
    // An edge's port name as errors show it (a tenant's string: cut to an id's length).
    let shown = |input: &str| input.chars().take(64).collect::<String>();
    let problem = |problem: String| PlanError::Inputs { node: e.to.clone(), problem };
    match (&spec.nodes[to].inputs, &e.input) {
        (None, None) => Ok(next as u32),
        (Some(names), Some(input)) => match names.iter().position(|n| n == input) {
            Some(port) => Ok(port as u32),
            None => Err(problem(format!(
                "the edge from `{}` names input `{}`, which is not one of its inputs {names:?}",
                e.from,
                shown(input)
            ))),
        },
        (Some(names), None) => Err(problem(format!(
            "the edge from `{}` must name one of its inputs {names:?} (`input`)",
            e.from
        ))),
        (None, Some(input)) => Err(problem(format!(
            "the edge from `{}` names input `{}`, but the node does not name its inputs",
            e.from,
            shown(input)
        ))),
    }
}

/// The index of side output `name` of node `from` among `names` (added when new): only
/// operators have side outputs, each name a valid id, at most [`MAX_SIDE_OUTPUTS`].
fn side_output_index(
    spec: &JobSpec,
    from: usize,
    name: &str,
    names: &mut Vec<String>,
) -> Result<u8, PlanError> {
    let node = &spec.nodes[from];
    let problem = |problem: String| PlanError::Outputs { node: node.id.clone(), problem };
    // A source's dead letters travel on a side output too.
    if node.kind != NodeKind::Operator && !(node.kind == NodeKind::Source && name == DEAD_LETTER_OUTPUT) {
        return Err(problem("only operators have side outputs (an edge's `output`)".into()));
    }
    if !valid_id(name) {
        return Err(problem(format!(
            "side output name `{}` is not 1 to 64 characters of A-Z a-z 0-9 _ -",
            name.chars().take(64).collect::<String>()
        )));
    }
    if let Some(i) = names.iter().position(|n| n == name) {
        return Ok(i as u8);
    }
    if names.len() >= MAX_SIDE_OUTPUTS {
        return Err(problem(format!(
            "edges may carry at most {MAX_SIDE_OUTPUTS} side outputs of one operator"
        )));
    }
    names.push(name.to_string());
    Ok((names.len() - 1) as u8)
}

/// Validates `spec` and resolves its modules and connectors.
pub fn plan(spec: &JobSpec, modules: &dyn ModuleLoader) -> Result<Plan, PlanError> {
    check_settings(&spec.settings)?;
    check_checkpoint_settings(&spec.settings.checkpoint)?;
    if spec.nodes.is_empty() {
        return Err(PlanError::Empty);
    }
    super::dead_letter::check_on_error(spec)?;
    // The dead-letter destination runs as one more sink, fed by the dead-letter side output
    // of every node that may send there; the plan keeps the spec as written.
    let mut plan = match super::dead_letter::with_dead_letters(spec) {
        Some(expanded) => plan_nodes(&expanded, modules)?,
        None => plan_nodes(spec, modules)?,
    };
    plan.spec = spec.clone();
    Ok(plan)
}

/// Validates the nodes and edges of `spec` (its dead-letter destination already a node).
fn plan_nodes(spec: &JobSpec, modules: &dyn ModuleLoader) -> Result<Plan, PlanError> {
    let index = index_nodes(spec)?;
    let Wiring { inputs, outputs, side_outputs } = wire_edges(spec, &index)?;
    let topo_order = topological_order(spec, &outputs, &inputs)?;
    let mut nodes = Vec::with_capacity(spec.nodes.len());
    for (i, n) in spec.nodes.iter().enumerate() {
        let body = node_body(n, &inputs[i], &outputs[i], modules)?;
        nodes.push(PlanNode {
            id: n.id.clone(),
            kind: n.kind,
            parallelism: n.parallelism,
            inputs: inputs[i].clone(),
            outputs: outputs[i].clone(),
            side_outputs: side_outputs[i].clone(),
            body,
        });
    }
    Ok(Plan { spec: spec.clone(), nodes, topo_order })
}

/// The job-wide limits a spec sets: each within its bounds.
fn check_settings(s: &Settings) -> Result<(), PlanError> {
    if s.max_parallelism == 0 || s.max_parallelism > 32_768 {
        return Err(PlanError::Settings(format!(
            "max_parallelism must be between 1 and 32768, got {}",
            s.max_parallelism
        )));
    }
    if s.channel_capacity == 0 || s.channel_capacity > 65_536 {
        return Err(PlanError::Settings(format!(
            "channel_capacity must be between 1 and 65536, got {}",
            s.channel_capacity
        )));
    }
    if !(MIN_CHANNEL_CAPACITY_BYTES..=1 << 30).contains(&s.channel_capacity_bytes) {
        return Err(PlanError::Settings(format!(
            "channel_capacity_bytes must be between {MIN_CHANNEL_CAPACITY_BYTES} and {}, got {}",
            1u64 << 30,
            s.channel_capacity_bytes
        )));
    }
    if s.cpu_limit_ms == 0 {
        return Err(PlanError::Settings("cpu_limit_ms must be at least 1".into()));
    }
    if s.wall_limit_ms > MAX_WALL_LIMIT_MS {
        return Err(PlanError::Settings(format!(
            "wall_limit_ms must be at most {MAX_WALL_LIMIT_MS} (an hour), got {}",
            s.wall_limit_ms
        )));
    }
    if s.wall_limit_ms < s.cpu_limit_ms {
        return Err(PlanError::Settings(format!(
            "wall_limit_ms ({}) must be at least cpu_limit_ms ({}): a call's CPU time is part of its wall time",
            s.wall_limit_ms, s.cpu_limit_ms
        )));
    }
    if s.memory_limit_mb == 0 {
        return Err(PlanError::Settings("memory_limit_mb must be at least 1".into()));
    }
    if s.max_output_bytes_per_call < 1024 {
        return Err(PlanError::Settings(format!(
            "max_output_bytes_per_call must be at least 1024, got {}",
            s.max_output_bytes_per_call
        )));
    }
    if s.max_dead_letters_per_minute == 0 {
        return Err(PlanError::Settings("max_dead_letters_per_minute must be at least 1".into()));
    }
    Ok(())
}

/// The checkpoint settings: each within its bounds, and consistent with each other.
fn check_checkpoint_settings(c: &CheckpointSettings) -> Result<(), PlanError> {
    if c.interval_ms == Some(0) {
        return Err(PlanError::Settings("checkpoint.interval_ms must be at least 1 (or null)".into()));
    }
    if c.timeout_ms == 0 {
        return Err(PlanError::Settings("checkpoint.timeout_ms must be at least 1".into()));
    }
    if c.max_concurrent == 0 || c.max_concurrent > 16 {
        return Err(PlanError::Settings(format!(
            "checkpoint.max_concurrent must be between 1 and 16, got {}",
            c.max_concurrent
        )));
    }
    if c.max_concurrent > 1 && c.effective_aligned_timeout().is_some() {
        return Err(PlanError::Settings(format!(
            "unaligned checkpoints (checkpoint.mode `unaligned`, or checkpoint.aligned_timeout_ms) need \
             checkpoint.max_concurrent 1, got {}: a task takes one checkpoint at a time",
            c.max_concurrent
        )));
    }
    if c.retained == 0 || c.retained > 1000 {
        return Err(PlanError::Settings(format!(
            "checkpoint.retained must be between 1 and 1000, got {}",
            c.retained
        )));
    }
    if c.max_concurrent > 1 && c.retained < 2 {
        return Err(PlanError::Settings(
            "checkpoint.max_concurrent above 1 needs checkpoint.retained of at least 2 (a checkpoint in flight may build on the one before the latest)".into(),
        ));
    }
    if c.max_chain_length == 0 || c.max_chain_length > 1000 {
        return Err(PlanError::Settings(format!(
            "checkpoint.max_chain_length must be between 1 and 1000, got {}",
            c.max_chain_length
        )));
    }
    Ok(())
}

/// Each node's index by id: ids valid and unique, parallelism within bounds.
fn index_nodes(spec: &JobSpec) -> Result<HashMap<&str, usize>, PlanError> {
    let s = &spec.settings;
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, n) in spec.nodes.iter().enumerate() {
        if !valid_id(&n.id) {
            return Err(PlanError::InvalidId(n.id.clone()));
        }
        if index.insert(n.id.as_str(), i).is_some() {
            return Err(PlanError::DuplicateId(n.id.clone()));
        }
        if n.parallelism == 0 || n.parallelism > s.max_parallelism {
            return Err(PlanError::Parallelism {
                node: n.id.clone(),
                got: n.parallelism,
                max: s.max_parallelism,
            });
        }
    }

    Ok(index)
}

/// What node `n` runs, checked against its shape (its incoming and outgoing edges): a
/// source or sink connector, or an operator's loaded module.
fn node_body(
    n: &NodeSpec,
    inputs: &[PlanEdge],
    outputs: &[PlanEdge],
    modules: &dyn ModuleLoader,
) -> Result<NodeBody, PlanError> {
    let shape = |problem: &str| PlanError::Shape { node: n.id.clone(), problem: problem.into() };
    let connector_err = |source| PlanError::Connector { node: n.id.clone(), source };
    Ok(match n.kind {
        NodeKind::Source => {
            if !inputs.is_empty() {
                return Err(shape("a source cannot have inputs"));
            }
            if outputs.is_empty() {
                return Err(shape("a source needs at least one outgoing edge"));
            }
            if n.module.is_some() {
                return Err(shape("a source takes a `connector`, not a `module`"));
            }
            let connector = n.connector.as_deref().ok_or_else(|| shape("a source needs a `connector`"))?;
            NodeBody::Source(SourceConfig::parse(connector, &n.config).map_err(connector_err)?)
        }
        NodeKind::Sink => {
            if inputs.is_empty() {
                return Err(shape("a sink needs at least one incoming edge"));
            }
            if !outputs.is_empty() {
                return Err(shape("a sink cannot have outgoing edges"));
            }
            if n.module.is_some() {
                return Err(shape("a sink takes a `connector`, not a `module`"));
            }
            let connector = n.connector.as_deref().ok_or_else(|| shape("a sink needs a `connector`"))?;
            NodeBody::Sink(SinkConfig::parse(connector, &n.config).map_err(connector_err)?)
        }
        NodeKind::Operator => {
            if inputs.is_empty() {
                return Err(shape("an operator needs at least one incoming edge"));
            }
            if n.connector.is_some() {
                return Err(shape("an operator takes a `module`, not a `connector`"));
            }
            let reference = n.module.as_deref().ok_or_else(|| shape("an operator needs a `module`"))?;
            let module = modules
                .load(reference)
                .map_err(|e| PlanError::Module { node: n.id.clone(), message: e.to_string() })?;
            NodeBody::Operator { module, config: n.config.to_string() }
        }
    })
}

/// Kahn's algorithm; on a cycle, names a node that lies on it.
fn topological_order(
    spec: &JobSpec,
    outputs: &[Vec<PlanEdge>],
    inputs: &[Vec<PlanEdge>],
) -> Result<Vec<usize>, PlanError> {
    let n = spec.nodes.len();
    let mut indegree: Vec<usize> = inputs.iter().map(Vec::len).collect();
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    ready.reverse();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        order.push(i);
        for e in &outputs[i] {
            indegree[e.to] -= 1;
            if indegree[e.to] == 0 {
                ready.push(e.to);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every node left has an input from another node left: walk backwards until a node
    // repeats; that node is on a cycle.
    let mut seen = vec![false; n];
    let mut at = (0..n).find(|&i| indegree[i] > 0).expect("a node is left");
    while !seen[at] {
        seen[at] = true;
        at = inputs[at].iter().map(|e| e.from).find(|&f| indegree[f] > 0).expect("cycle");
    }
    Err(PlanError::Cycle(spec.nodes[at].id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::DEAD_LETTER_NODE;

    /// Loads nothing: the specs below have no operators.
    struct NoModules;

    impl ModuleLoader for NoModules {
        fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError> {
            Err(format!("no module `{reference}`").into())
        }
    }

    #[test]
    fn the_subtask_count_saturates_instead_of_wrapping() {
        let spec = JobSpec::from_json(
            r#"{ "nodes": [
                { "id": "in", "kind": "source", "connector": "generator", "parallelism": 4,
                  "config": { "mode": "sequence", "count": 1 } },
                { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": 4 } ],
              "edges": [ { "from": "in", "to": "out" } ] }"#,
        )
        .unwrap();
        let mut plan = plan(&spec, &NoModules).unwrap();
        assert_eq!(plan.subtask_count(), 8);
        // Parallelism is bounded at plan time; the count must not wrap even past that.
        plan.nodes[0].parallelism = u32::MAX;
        assert_eq!(plan.subtask_count(), u32::MAX);
    }

    #[test]
    fn on_error_is_checked_per_kind_and_the_destination_becomes_a_sink_node() {
        let spec = |source: &str, sink: &str, dead: &str| {
            JobSpec::from_json(&format!(
                r#"{{ "nodes": [
                    {{ "id": "in", "kind": "source", "connector": "generator", "parallelism": 2,
                      "config": {{ "mode": "sequence", "count": 1 }} {source} }},
                    {{ "id": "out", "kind": "sink", "connector": "blackhole" {sink} }} ],
                  "edges": [ {{ "from": "in", "to": "out" }} ] {dead} }}"#
            ))
            .unwrap()
        };
        let dead = r#", "dead_letter": { "connector": "blackhole" }"#;
        let err = |s: JobSpec| plan(&s, &NoModules).unwrap_err().to_string();
        assert!(
            err(spec(r#", "on_error": "skip""#, "", dead))
                .contains("`on_error: skip` is not for a source node; it takes fail, drop, dead_letter")
        );
        assert!(err(spec("", r#", "on_error": "drop""#, dead)).contains("not for a sink node"));
        assert!(
            err(spec(r#", "on_error": "dead_letter""#, "", ""))
                .contains("needs the job's `dead_letter` destination")
        );
        let bad_connector = r#", "dead_letter": { "connector": "generator" }"#;
        assert!(err(spec("", "", bad_connector)).contains("connector is `stream` or `kafka`"));
        let taken = spec("", "", dead);
        let mut taken_id = taken.clone();
        taken_id.nodes[1].id = DEAD_LETTER_NODE.into();
        taken_id.edges[0].to = DEAD_LETTER_NODE.into();
        assert!(err(taken_id).contains("is the id of the job's dead-letter destination"));

        // A source that dead-letters feeds the destination from its side output; the plan
        // keeps the spec as written.
        let s = spec(r#", "on_error": "dead_letter""#, "", dead);
        let p = plan(&s, &NoModules).unwrap();
        assert_eq!(p.spec, s);
        let names: Vec<&str> = p.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(names, ["in", "out", DEAD_LETTER_NODE]);
        assert_eq!(p.nodes[0].side_outputs, [DEAD_LETTER_OUTPUT]);
        let edge = p.nodes[2].inputs[0];
        assert_eq!((edge.from, edge.output, edge.partitioning), (0, Some(0), Partitioning::Rebalance));
        // `drop` needs no destination and adds no node.
        let p = plan(&spec(r#", "on_error": "drop""#, "", ""), &NoModules).unwrap();
        assert_eq!(p.nodes.len(), 2);
        // A source's side outputs are its dead letters only.
        let mut other = spec("", "", "");
        other.edges[0].output = Some("late".into());
        assert!(err(other).contains("only operators have side outputs"));
    }

    /// The ports of `j`'s incoming edges as (upstream node index, port), in port order, for
    /// sources `a`, `b` → operator `j` with `inputs` (a JSON fragment) and `edges`.
    fn ports(inputs: &str, edges: &str) -> Result<Vec<(usize, u32)>, PlanError> {
        let spec = JobSpec::from_json(&format!(
            r#"{{ "nodes": [
                {{ "id": "a", "kind": "source", "connector": "generator" }},
                {{ "id": "b", "kind": "source", "connector": "generator" }},
                {{ "id": "j", "kind": "operator", "module": "builtin:none" {inputs} }} ],
              "edges": [ {edges} ] }}"#
        ))
        .unwrap();
        let index = spec.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let Wiring { inputs, outputs, .. } = wire_edges(&spec, &index)?;
        // Every edge is an output of its upstream node too.
        assert_eq!(outputs.iter().map(Vec::len).sum::<usize>(), inputs[2].len());
        Ok(inputs[2].iter().map(|e| (e.from, e.port)).collect())
    }

    fn inputs_problem(result: Result<Vec<(usize, u32)>, PlanError>) -> String {
        match result {
            Err(PlanError::Inputs { problem, .. }) => problem,
            other => panic!("expected an inputs error, got {other:?}"),
        }
    }

    #[test]
    fn named_ports_resolve_by_name_and_one_node_may_feed_two_ports() {
        let both = r#", "inputs": ["left", "right"]"#;
        assert_eq!(
            ports(
                both,
                r#"{ "from": "b", "to": "j", "input": "right" }, { "from": "a", "to": "j", "input": "left" }"#
            )
            .unwrap(),
            vec![(0, 0), (1, 1)]
        );
        // A self-join: the same upstream node on both ports.
        assert_eq!(
            ports(
                both,
                r#"{ "from": "a", "to": "j", "input": "left" }, { "from": "a", "to": "j", "input": "right" }"#
            )
            .unwrap(),
            vec![(0, 0), (0, 1)]
        );
        // Without names, ports are the edges in spec order, and one edge per pair.
        assert_eq!(
            ports("", r#"{ "from": "b", "to": "j" }, { "from": "a", "to": "j" }"#).unwrap(),
            vec![(1, 0), (0, 1)]
        );
        assert!(matches!(
            ports("", r#"{ "from": "a", "to": "j" }, { "from": "a", "to": "j" }"#),
            Err(PlanError::DuplicateEdge { .. })
        ));
    }

    #[test]
    fn wrong_ports_are_refused_with_the_reason() {
        let both = r#", "inputs": ["left", "right"]"#;
        let problem = inputs_problem(ports(both, r#"{ "from": "a", "to": "j", "input": "left" }"#));
        assert!(problem.contains("input `right` has no incoming edge"), "{problem}");
        let problem = inputs_problem(ports(
            both,
            r#"{ "from": "a", "to": "j" }, { "from": "b", "to": "j", "input": "right" }"#,
        ));
        assert!(problem.contains("must name one of its inputs"), "{problem}");
        let problem = inputs_problem(ports(
            both,
            r#"{ "from": "a", "to": "j", "input": "middle" }, { "from": "b", "to": "j", "input": "right" }"#,
        ));
        assert!(problem.contains("`middle`, which is not one of its inputs"), "{problem}");
        let problem = inputs_problem(ports(
            both,
            r#"{ "from": "a", "to": "j", "input": "left" }, { "from": "b", "to": "j", "input": "left" }, { "from": "b", "to": "j", "input": "right" }"#,
        ));
        assert!(problem.contains("input `left` has more than one incoming edge"), "{problem}");
        let problem = inputs_problem(ports("", r#"{ "from": "a", "to": "j", "input": "left" }"#));
        assert!(problem.contains("does not name its inputs"), "{problem}");
        let problem =
            inputs_problem(ports(r#", "inputs": ["x", "x"]"#, r#"{ "from": "a", "to": "j", "input": "x" }"#));
        assert!(problem.contains("named twice"), "{problem}");
        let problem = inputs_problem(ports(r#", "inputs": []"#, r#"{ "from": "a", "to": "j" }"#));
        assert!(problem.contains("1 to 16 ports"), "{problem}");
        let problem =
            inputs_problem(ports(r#", "inputs": ["a b"]"#, r#"{ "from": "a", "to": "j", "input": "a b" }"#));
        assert!(problem.contains("is not 1 to 64 characters"), "{problem}");
    }

    /// The side outputs of `j` and (output index, downstream node) of its outgoing edges, for
    /// source `a` → operator `j` → sinks `s`, `t` with `edges` (a JSON fragment).
    /// `j`'s side-output names, and (output index, downstream node) of each outgoing edge.
    type SideOutputs = (Vec<String>, Vec<(Option<u8>, usize)>);

    fn side_outputs(edges: &str) -> Result<SideOutputs, PlanError> {
        let spec = JobSpec::from_json(&format!(
            r#"{{ "nodes": [
                {{ "id": "a", "kind": "source", "connector": "generator" }},
                {{ "id": "j", "kind": "operator", "module": "builtin:none" }},
                {{ "id": "s", "kind": "sink", "connector": "blackhole" }},
                {{ "id": "t", "kind": "sink", "connector": "blackhole" }} ],
              "edges": [ {{ "from": "a", "to": "j" }}, {edges} ] }}"#
        ))
        .unwrap();
        let index = spec.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let w = wire_edges(&spec, &index)?;
        Ok((w.side_outputs[1].clone(), w.outputs[1].iter().map(|e| (e.output, e.to)).collect()))
    }

    #[test]
    fn edges_carry_named_side_outputs_of_operators() {
        let (names, edges) = side_outputs(
            r#"{ "from": "j", "to": "s" }, { "from": "j", "to": "t", "output": "late" },
               { "from": "j", "to": "s", "output": "late" }"#,
        )
        .unwrap();
        assert_eq!(names, vec!["late".to_string()]);
        assert_eq!(edges, vec![(None, 2), (Some(0), 3), (Some(0), 2)]);
        let outputs = |r: Result<_, PlanError>| match r {
            Err(PlanError::Outputs { node, problem }) => format!("{node}: {problem}"),
            other => panic!("expected an outputs error, got {other:?}"),
        };
        let p = outputs(side_outputs(r#"{ "from": "a", "to": "s", "output": "late" }"#));
        assert!(p.starts_with("a: only operators have side outputs"), "{p}");
        let p = outputs(side_outputs(r#"{ "from": "j", "to": "s", "output": "no way" }"#));
        assert!(p.contains("is not 1 to 64 characters"), "{p}");
        let many: Vec<String> =
            (0..17).map(|i| format!(r#"{{ "from": "j", "to": "s", "output": "o{i}" }}"#)).collect();
        let p = outputs(side_outputs(&many.join(",")));
        assert!(p.contains("at most 16 side outputs"), "{p}");
        assert!(matches!(
            side_outputs(
                r#"{ "from": "j", "to": "s", "output": "x" }, { "from": "j", "to": "s", "output": "x" }"#
            ),
            Err(PlanError::DuplicateEdge { .. })
        ));
    }
}
