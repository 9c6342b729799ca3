//! Validation of a job spec and its expansion into a plan.

use std::collections::HashMap;
use std::sync::Arc;

use super::{JobSpec, NodeKind, Partitioning, PlanError};
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

/// Validates `spec` and resolves its modules and connectors.
pub fn plan(spec: &JobSpec, modules: &dyn ModuleLoader) -> Result<Plan, PlanError> {
    let s = &spec.settings;
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
    let c = &s.checkpoint;
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
    if spec.nodes.is_empty() {
        return Err(PlanError::Empty);
    }

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

    let mut inputs: Vec<Vec<PlanEdge>> = vec![Vec::new(); spec.nodes.len()];
    let mut outputs: Vec<Vec<PlanEdge>> = vec![Vec::new(); spec.nodes.len()];
    let mut seen_edges = std::collections::HashSet::new();
    for e in &spec.edges {
        // Each listing of an edge builds its channels again (p × p of them): a hostile spec
        // could multiply them by listing one edge many times.
        if !seen_edges.insert((e.from.as_str(), e.to.as_str())) {
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
        let port = inputs[to].len() as u32;
        let edge = PlanEdge { from, to, partitioning, port };
        inputs[to].push(edge);
        outputs[from].push(edge);
    }

    let topo_order = topological_order(spec, &outputs, &inputs)?;

    let mut nodes = Vec::with_capacity(spec.nodes.len());
    for (i, n) in spec.nodes.iter().enumerate() {
        let shape = |problem: &str| PlanError::Shape { node: n.id.clone(), problem: problem.into() };
        let connector_err = |source| PlanError::Connector { node: n.id.clone(), source };
        let body = match n.kind {
            NodeKind::Source => {
                if !inputs[i].is_empty() {
                    return Err(shape("a source cannot have inputs"));
                }
                if outputs[i].is_empty() {
                    return Err(shape("a source needs at least one outgoing edge"));
                }
                if n.module.is_some() {
                    return Err(shape("a source takes a `connector`, not a `module`"));
                }
                let connector =
                    n.connector.as_deref().ok_or_else(|| shape("a source needs a `connector`"))?;
                NodeBody::Source(SourceConfig::parse(connector, &n.config).map_err(connector_err)?)
            }
            NodeKind::Sink => {
                if inputs[i].is_empty() {
                    return Err(shape("a sink needs at least one incoming edge"));
                }
                if !outputs[i].is_empty() {
                    return Err(shape("a sink cannot have outgoing edges"));
                }
                if n.module.is_some() {
                    return Err(shape("a sink takes a `connector`, not a `module`"));
                }
                let connector = n.connector.as_deref().ok_or_else(|| shape("a sink needs a `connector`"))?;
                NodeBody::Sink(SinkConfig::parse(connector, &n.config).map_err(connector_err)?)
            }
            NodeKind::Operator => {
                if inputs[i].is_empty() {
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
        };
        nodes.push(PlanNode {
            id: n.id.clone(),
            kind: n.kind,
            parallelism: n.parallelism,
            inputs: inputs[i].clone(),
            outputs: outputs[i].clone(),
            body,
        });
    }
    Ok(Plan { spec: spec.clone(), nodes, topo_order })
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
}
