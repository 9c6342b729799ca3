//! The process figures of `/metrics`, read from `/proc` at each scrape under the names of
//! Prometheus' process collector. Where `/proc` cannot be read (not Linux) they are left out.

use std::fmt::Write as _;

/// Clock ticks per second of `/proc/self/stat` (`USER_HZ`: 100 on the Linux targets Weir
/// builds for).
const TICKS_PER_SECOND: f64 = 100.0;

/// What `/proc` says of this process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Process {
    /// Resident memory, bytes.
    pub resident_bytes: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// User and system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Start time, seconds since the Unix epoch.
    pub start_time_seconds: f64,
}

impl Process {
    /// This process now; `None` without `/proc`.
    pub fn read() -> Option<Process> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        Self::parse(&status, &stat, &boot, open_fds)
    }

    /// Parses `/proc/self/status`, `/proc/self/stat` and `/proc/stat`.
    fn parse(status: &str, stat: &str, boot: &str, open_fds: u64) -> Option<Process> {
        let rss_kb: u64 =
            status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces:
        // field 3 (state) is the first; utime is 14, stime 15, starttime 22.
        let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let field = |n: usize| rest.get(n - 3)?.parse::<u64>().ok();
        let cpu_ticks = field(14)? + field(15)?;
        let start_ticks = field(22)?;
        let btime: u64 = boot.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
        Some(Process {
            resident_bytes: rss_kb * 1024,
            open_fds,
            cpu_seconds: cpu_ticks as f64 / TICKS_PER_SECOND,
            start_time_seconds: btime as f64 + start_ticks as f64 / TICKS_PER_SECOND,
        })
    }

    /// The figures in the Prometheus text format.
    pub fn write(&self, out: &mut String) {
        let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        metric(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            self.resident_bytes as f64,
        );
        metric("process_open_fds", "gauge", "Number of open file descriptors.", self.open_fds as f64);
        metric(
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            self.cpu_seconds,
        );
        metric(
            "process_start_time_seconds",
            "gauge",
            "Start time of the process since unix epoch in seconds.",
            self.start_time_seconds,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_parse_with_spaces_in_the_command_name() {
        let status = "Name:\tweir\nVmPeak:\t  9000 kB\nVmRSS:\t  2048 kB\n";
        let stat = "42 (weir serve) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1000 1 2 3";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n";
        let p = Process::parse(status, stat, boot, 7).unwrap();
        assert_eq!(p.resident_bytes, 2048 * 1024);
        assert_eq!(p.open_fds, 7);
        assert!((p.cpu_seconds - 3.0).abs() < 1e-9, "{p:?}");
        assert!((p.start_time_seconds - 1_700_000_010.0).abs() < 1e-6, "{p:?}");
        assert_eq!(Process::parse("Name: x\n", stat, boot, 7), None);
    }

    #[test]
    fn this_process_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let p = Process::read().unwrap();
            assert!(p.resident_bytes > 0 && p.open_fds > 0 && p.start_time_seconds > 1e9, "{p:?}");
        }
    }
}
