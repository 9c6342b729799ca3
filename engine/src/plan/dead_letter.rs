//! Dead letters in a plan: each node's `on_error` checked against its kind, and the job's
//! dead-letter destination expanded into a sink node fed by the nodes that send there.

use super::{
    DEAD_LETTER_NODE, DEAD_LETTER_OUTPUT, DeadLetterSpec, EdgeSpec, JobSpec, NodeKind, NodeSpec, OnError,
    Partitioning, PlanError,
};

/// Checks every node's `on_error` against its kind and the job's `dead_letter` destination.
pub(super) fn check_on_error(spec: &JobSpec) -> Result<(), PlanError> {
    for n in &spec.nodes {
        let problem = |problem: String| Err(PlanError::OnError { node: n.id.clone(), problem });
        if n.id == DEAD_LETTER_NODE && spec.dead_letter.is_some() {
            return problem(format!(
                "`{DEAD_LETTER_NODE}` is the id of the job's dead-letter destination; name the node otherwise"
            ));
        }
        let Some(on_error) = n.on_error else { continue };
        let allowed: &[OnError] = match n.kind {
            NodeKind::Source => &[OnError::Fail, OnError::Drop, OnError::DeadLetter],
            NodeKind::Operator => &[OnError::Fail, OnError::Skip, OnError::DeadLetter],
            NodeKind::Sink => &[OnError::Fail],
        };
        if !allowed.contains(&on_error) {
            let names: Vec<&str> = allowed.iter().map(|o| o.name()).collect();
            return problem(format!(
                "`on_error: {}` is not for a {} node; it takes {}",
                on_error.name(),
                match n.kind {
                    NodeKind::Source => "source",
                    NodeKind::Operator => "operator",
                    NodeKind::Sink => "sink",
                },
                names.join(", ")
            ));
        }
        if on_error == OnError::DeadLetter && spec.dead_letter.is_none() {
            return problem(
                "`on_error: dead_letter` needs the job's `dead_letter` destination (a `stream` or `kafka` sink)"
                    .into(),
            );
        }
    }
    if let Some(d) = &spec.dead_letter
        && !matches!(d.connector.as_str(), "stream" | "kafka" | "file" | "blackhole")
    {
        return Err(PlanError::OnError {
            node: DEAD_LETTER_NODE.into(),
            problem: format!(
                "the dead-letter destination's connector is `stream` or `kafka` (or `file` locally), got `{}`",
                d.connector.chars().take(64).collect::<String>()
            ),
        });
    }
    Ok(())
}

/// The spec with its dead-letter destination as a sink node: every source whose `on_error`
/// is `dead_letter`, and every operator (a guest may send records there itself), feed it
/// their dead-letter side output. `None` without a destination.
pub fn with_dead_letters(spec: &JobSpec) -> Option<JobSpec> {
    let destination = spec.dead_letter.as_ref()?;
    let mut expanded = spec.clone();
    for n in &spec.nodes {
        let feeds = match n.kind {
            NodeKind::Source => n.on_error == Some(OnError::DeadLetter),
            NodeKind::Operator => true,
            NodeKind::Sink => false,
        };
        if feeds {
            expanded.edges.push(EdgeSpec {
                from: n.id.clone(),
                to: DEAD_LETTER_NODE.into(),
                partitioning: Some(Partitioning::Rebalance),
                input: None,
                output: Some(DEAD_LETTER_OUTPUT.into()),
            });
        }
    }
    expanded.nodes.push(dead_letter_node(destination));
    Some(expanded)
}

/// The sink node a dead-letter destination runs as.
pub fn dead_letter_node(destination: &DeadLetterSpec) -> NodeSpec {
    NodeSpec {
        id: DEAD_LETTER_NODE.into(),
        kind: NodeKind::Sink,
        parallelism: 1,
        module: None,
        connector: Some(destination.connector.clone()),
        config: destination.config.clone(),
        inputs: None,
        on_error: None,
    }
}
