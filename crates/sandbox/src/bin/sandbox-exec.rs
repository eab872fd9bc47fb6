//! `sandbox-exec`: runs one command in a box, like `boxmaker box exec` will. Used by the
//! escape suite in `tests/`, and handy by hand.
//!
//! ```text
//! sandbox-exec --workspace DIR [--mount HOST:AT[:rw]] [--network] [--env NAME]
//!              [--memory BYTES] [--address-space BYTES|unlimited] [--processes N]
//!              [--file-size BYTES] [--timeout SECS]
//!              [--capture BYTES] [--via-helper | --pool] -- CMD [ARGS...]
//! sandbox-exec --doctor
//! ```
//!
//! Without `--capture` it runs the box as `boxmaker box exec` does, with
//! [`sandbox::run_in_process`] (this single-threaded process is the helper); `--via-helper`
//! starts a separate helper process instead ([`sandbox::run`]); `--pool` (with `--capture`)
//! runs it on a pre-forked helper, as the runner runs a `run` call ([`sandbox::HelperPool`]):
//! the pool is filled first, and the summary line says whether an idle helper built the box.
//!
//! Exit status: the command's (128 + signal, 124 on timeout); 125 when the box failed.
//! `--capture` runs with captured output (stdin empty), then prints it, and a summary line on
//! stderr: `sandbox-exec: stdout_bytes=N stdout_truncated=B oom_killed=B cgroup_limits=B status=S`
//! (and ` pooled=B` with `--pool`).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use sandbox::{HelperCommand, Io, Mount, Requirements, Spec};

fn main() -> ExitCode {
    sandbox::enter_helper_if_requested();
    match real_main() {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("sandbox-exec: {e}");
            ExitCode::from(125)
        }
    }
}

fn real_main() -> Result<i32, String> {
    let mut args = std::env::args().skip(1);
    let mut spec = Spec::new(Vec::new(), "");
    let mut capture: Option<usize> = None;
    let mut via_helper = false;
    let mut pool = false;
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{v}: {e}"));
        match a.as_str() {
            "--doctor" => {
                let report = sandbox::doctor(&Requirements::default());
                print!("{report}");
                return Ok(if report.missing().is_empty() { 0 } else { 1 });
            }
            "--workspace" => spec.workspace = value("--workspace")?.into(),
            "--network" => spec.network = true,
            "--via-helper" => via_helper = true,
            "--pool" => pool = true,
            "--mount" => {
                let v = value("--mount")?;
                let parts: Vec<&str> = v.split(':').collect();
                let (host, at, write) = match parts.as_slice() {
                    [h, a] => (h, a, false),
                    [h, a, "rw"] => (h, a, true),
                    _ => return Err(format!("--mount {v}: expected HOST:AT[:rw]")),
                };
                spec.mounts.push(Mount {
                    host: host.into(),
                    at: at.into(),
                    write,
                });
            }
            "--env" => {
                let name = value("--env")?;
                if let Ok(v) = std::env::var(&name) {
                    spec.env.insert(name, v);
                }
            }
            "--memory" => spec.limits.memory_bytes = num(value("--memory")?)?,
            "--address-space" => {
                spec.limits.address_space_bytes = match value("--address-space")?.as_str() {
                    "unlimited" => None,
                    v => Some(num(v.to_string())?),
                }
            }
            "--processes" => spec.limits.processes = num(value("--processes")?)?,
            "--file-size" => spec.limits.file_size_bytes = num(value("--file-size")?)?,
            "--timeout" => spec.limits.timeout = Duration::from_secs(num(value("--timeout")?)?),
            "--capture" => capture = Some(num(value("--capture")?)? as usize),
            "--" => {
                spec.argv = args.by_ref().collect();
                break;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if let Some(cap) = capture {
        spec.io = Io::Capture {
            stdin: Vec::new(),
            output_cap: cap,
        };
    }
    let helper = HelperCommand::current_exe().map_err(|e| e.to_string())?;
    let mut pooled = None;
    let outcome = if pool {
        if capture.is_none() {
            return Err("--pool needs --capture".into());
        }
        let pool = sandbox::HelperPool::new(helper);
        if pool.prefill(Duration::from_secs(30)) == 0 {
            return Err("no idle helper after 30 s".into());
        }
        let out = pool.run_stoppable(&spec, &mut drop, &mut drop);
        pooled = Some(pool.served() > 0);
        out
    } else if via_helper {
        sandbox::run(&spec, &helper)
    } else {
        sandbox::run_in_process(&spec, &helper)
    }
    .map_err(|e| e.to_string())?;
    if capture.is_some() {
        let _ = std::io::stdout().write_all(&outcome.stdout);
        let _ = std::io::stderr().write_all(&outcome.stderr);
        eprintln!(
            "sandbox-exec: stdout_bytes={} stdout_truncated={} oom_killed={} cgroup_limits={} status={:?}",
            outcome.stdout.len(),
            outcome.stdout_truncated,
            outcome.oom_killed,
            outcome.cgroup_limits,
            outcome.status
        );
        if let Some(p) = pooled {
            eprintln!("sandbox-exec: pooled={p}");
        }
    }
    Ok(outcome.status.exit_code())
}
