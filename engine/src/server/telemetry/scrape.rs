//! What a scrape adds to the recorded metrics, read at that moment: the process, the build,
//! the uptime, each tenant's usage against its quotas, and each worker.

use std::fmt::Write as _;

use super::Telemetry;
use crate::cluster::WorkerInfo;
use crate::server::Usage;
use crate::server::tenants::{Quotas, Tenant};
use crate::server::worker_load::WorkerLoad;

impl Telemetry {
    /// The whole exposition of a scrape: the recorded metrics, then the process, the
    /// build, each tenant's usage against its quotas, and each worker.
    pub fn scrape(&self, tenants: &[(Tenant, Usage)], workers: &[(WorkerInfo, WorkerLoad)]) -> String {
        let mut out = self.render();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if let Some(p) = super::process::Process::read() {
            p.write(&mut out);
        }
        let _ = writeln!(out, "# HELP weir_build_info The Weir version serving.");
        let _ = writeln!(out, "# TYPE weir_build_info gauge");
        let _ = writeln!(out, "weir_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
        let _ = writeln!(out, "# HELP weir_uptime_seconds Seconds since the server opened its store.");
        let _ = writeln!(out, "# TYPE weir_uptime_seconds gauge");
        let _ = writeln!(out, "weir_uptime_seconds {}", self.started.elapsed().as_secs_f64());
        write_tenants(&mut out, tenants);
        write_workers(&mut out, workers);
        out
    }
}

impl Telemetry {
    /// What tenant `tenant` may see: the series of the recorded metrics and of its usage
    /// that carry its `tenant` label, with their `HELP` and `TYPE` lines; nothing of the
    /// process, the workers or any other tenant.
    pub fn scrape_tenant(&self, tenant: &Tenant, usage: &Usage) -> String {
        let mut all = self.render();
        if !all.is_empty() && !all.ends_with('\n') {
            all.push('\n');
        }
        write_tenants(&mut all, &[(tenant.clone(), *usage)]);
        only_tenant(&all, &tenant.id)
    }
}

/// The lines of exposition `text` whose samples carry the label `tenant="<id>"`, each
/// metric's `HELP` and `TYPE` lines kept when one of its samples is.
pub(crate) fn only_tenant(text: &str, id: &str) -> String {
    let needle = format!("tenant=\"{}\"", label(id));
    let mut out = String::new();
    let mut header = String::new();
    let mut in_samples = false;
    for line in text.lines() {
        if line.starts_with("# ") {
            // A new metric's comments: held until one of its samples is kept.
            if in_samples
                || line.starts_with("# HELP ")
                || (line.starts_with("# TYPE ") && header.contains("# TYPE "))
            {
                header.clear();
                in_samples = false;
            }
            header.push_str(line);
            header.push('\n');
            continue;
        }
        in_samples = true;
        let labels =
            line.find('{').and_then(|start| line[start..].find('}').map(|end| &line[start..start + end + 1]));
        let ours = labels.is_some_and(|l| {
            l.match_indices(&needle).any(|(at, _)| {
                let before = l.as_bytes()[at - 1];
                before == b'{' || before == b','
            })
        });
        if ours {
            out.push_str(&header);
            header.clear();
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The quotas as (name, limit, usage if the quota is a total the tenant uses up). Every
/// field of [`Quotas`] is here (the destructuring fails to compile when one is added).
fn quota_rows(quotas: &Quotas, usage: &Usage) -> [(&'static str, u64, Option<u64>); 8] {
    let Quotas {
        max_jobs,
        max_subtasks,
        max_memory_mb,
        max_cpu_ms,
        max_module_bytes,
        max_storage_bytes,
        max_buffered_bytes,
        max_log_bytes_per_job,
    } = quotas;
    [
        ("jobs", u64::from(*max_jobs), Some(u64::from(usage.jobs))),
        ("subtasks", u64::from(*max_subtasks), Some(u64::from(usage.subtasks))),
        ("storage_bytes", *max_storage_bytes, Some(usage.storage_bytes)),
        ("buffered_bytes", *max_buffered_bytes, Some(usage.buffered_bytes)),
        // Limits of one instance, call or upload: nothing accumulates against them.
        ("memory_mb", *max_memory_mb, None),
        ("cpu_ms", *max_cpu_ms, None),
        ("module_bytes", *max_module_bytes, None),
        ("log_bytes_per_job", *max_log_bytes_per_job, None),
    ]
}

/// A label value escaped for the text format.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn write_tenants(out: &mut String, tenants: &[(Tenant, Usage)]) {
    let mut usage = String::new();
    let mut quota = String::new();
    let mut disabled = String::new();
    for (t, u) in tenants {
        let id = label(&t.id);
        for (name, limit, used) in quota_rows(&t.quotas, u) {
            let _ = writeln!(quota, "weir_tenant_quota{{tenant=\"{id}\",quota=\"{name}\"}} {limit}");
            if let Some(used) = used {
                let _ = writeln!(usage, "weir_tenant_usage{{tenant=\"{id}\",quota=\"{name}\"}} {used}");
            }
        }
        let _ = writeln!(
            disabled,
            "weir_tenant_disabled{{tenant=\"{id}\",name=\"{}\"}} {}",
            label(&t.name),
            u8::from(t.disabled_ms.is_some())
        );
    }
    let _ = write!(
        out,
        "# HELP weir_tenant_usage What a tenant uses of a quota.\n# TYPE weir_tenant_usage gauge\n{usage}\
         # HELP weir_tenant_quota A tenant's limit.\n# TYPE weir_tenant_quota gauge\n{quota}\
         # HELP weir_tenant_disabled 1 when the admin disabled the tenant.\n\
         # TYPE weir_tenant_disabled gauge\n{disabled}"
    );
}

/// One series per worker and figure: the registry's view (live, slots, heartbeat age) and
/// what the running jobs' subtasks do there. Lost workers are listed with `weir_worker_up 0`
/// (the registry keeps the latest 64) so that an alert sees one go.
fn write_workers(out: &mut String, workers: &[(WorkerInfo, WorkerLoad)]) {
    if workers.is_empty() {
        return;
    }
    type Figure = fn(&WorkerInfo, &WorkerLoad) -> f64;
    let figures: [(&str, &str, Figure); 8] = [
        ("weir_worker_up", "1 while the worker is registered and live, 0 once lost.", |w, _| {
            f64::from(u8::from(w.lost.is_none()))
        }),
        ("weir_worker_slots", "Subtasks the worker runs at once.", |w, _| f64::from(w.slots)),
        ("weir_worker_used_slots", "Slots reserved for running attempts.", |w, _| {
            f64::from(w.reserved.values().sum::<u32>())
        }),
        ("weir_worker_heartbeat_age_seconds", "Seconds since the worker's last heartbeat.", |w, _| {
            w.heartbeat_age_ms as f64 / 1000.0
        }),
        ("weir_worker_subtasks", "Subtasks of running jobs on the worker.", |_, l| f64::from(l.subtasks)),
        ("weir_worker_records_in_per_second", "Records its subtasks take in per second.", |_, l| {
            l.records_in_per_second
        }),
        ("weir_worker_records_out_per_second", "Records its subtasks emit per second.", |_, l| {
            l.records_out_per_second
        }),
        (
            "weir_worker_backpressured_subtasks",
            "Its subtasks that waited for room downstream half the time or more.",
            |_, l| f64::from(l.backpressured),
        ),
    ];
    for (name, help, figure) in figures {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (w, load) in workers {
            let _ = writeln!(
                out,
                "{name}{{worker=\"{}\",name=\"{}\"}} {}",
                w.id,
                label(&w.name),
                figure(w, load)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}

#[cfg(test)]
mod tenant_tests {
    use super::only_tenant;

    #[test]
    fn a_tenant_sees_its_own_series_only() {
        let text = "# HELP weir_records_in_total Records.\n# TYPE weir_records_in_total counter\n\
                    weir_records_in_total{tenant=\"a\",job=\"j\"} 3\n\
                    weir_records_in_total{tenant=\"ab\",job=\"k\"} 4\n\
                    weir_records_in_total{job=\"x\",tenant=\"b\"} 5\n\
                    # HELP process_cpu_seconds_total CPU.\n# TYPE process_cpu_seconds_total counter\n\
                    process_cpu_seconds_total 9\n\
                    # HELP weir_other Other.\n# TYPE weir_other gauge\nweir_other{owner=\"tenant=\\\"a\\\"\"} 1\n";
        let a = only_tenant(text, "a");
        assert_eq!(
            a,
            "# HELP weir_records_in_total Records.\n# TYPE weir_records_in_total counter\n\
             weir_records_in_total{tenant=\"a\",job=\"j\"} 3\n"
        );
        let b = only_tenant(text, "b");
        assert!(
            b.contains("weir_records_in_total{job=\"x\",tenant=\"b\"} 5") && !b.contains("process_"),
            "{b}"
        );
    }
}
