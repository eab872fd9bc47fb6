//! `boxes`: runs one command in N fresh boxes, one after another, as the runner runs a `run`
//! call's box (captured output; a pre-forked helper, or with `--exec` a helper started per
//! box), and prints the latency of each box run: min, p10, p50, p90, mean. For bench/ and for tracing
//! one box run (`perf trace`, `strace -f`) without the MCP and gate hops around it.
//!
//! ```text
//! cargo run --release -p sandbox --example boxes -- [--exec] N WORKSPACE CMD [ARGS...]
//! ```

use std::process::ExitCode;
use std::time::Instant;

use sandbox::{HELPER_ARG, HelperCommand, HelperPool, Io, Spec};

fn main() -> ExitCode {
    sandbox::enter_helper_if_requested();
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let exec = args.first().is_some_and(|a| a == "--exec");
    if exec {
        args.remove(0);
    }
    let usage = || {
        eprintln!("usage: boxes [--exec] N WORKSPACE CMD [ARGS...]");
        ExitCode::from(2)
    };
    if args.len() < 3 {
        return usage();
    }
    let Ok(n) = args[0].parse::<usize>() else {
        return usage();
    };
    let mut spec = Spec::new(args[2..].to_vec(), &args[1]);
    spec.io = Io::Capture {
        stdin: Vec::new(),
        output_cap: 1 << 20,
    };
    let helper = match std::env::current_exe() {
        Ok(program) => HelperCommand {
            program,
            args: vec![HELPER_ARG.into()],
        },
        Err(e) => {
            eprintln!("boxes: {e}");
            return ExitCode::from(1);
        }
    };
    let pool = HelperPool::new(helper.clone());
    let mut took = Vec::with_capacity(n);
    // Warm-up: the pool's first helpers, the page cache.
    for i in 0..n + 10 {
        let t = Instant::now();
        let out = if exec {
            sandbox::run_stoppable(&spec, &helper, &mut drop, &mut drop)
        } else {
            pool.run_stoppable(&spec, &mut drop, &mut drop)
        };
        let dt = t.elapsed();
        match out {
            Ok(o) if o.status.exit_code() == 0 => {}
            Ok(o) => {
                eprintln!("boxes: the command ended {:?}", o.status);
                return ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("boxes: {e}");
                return ExitCode::from(1);
            }
        }
        if i >= 10 {
            took.push(dt.as_secs_f64() * 1e3);
        }
        // As between calls: the pool refills while no box is being made.
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((q * took.len() as f64) as usize).min(took.len() - 1)];
    let mean = took.iter().sum::<f64>() / took.len() as f64;
    println!(
        "{} boxes ({}): min {:.3} ms, p10 {:.3} ms, p50 {:.3} ms, p90 {:.3} ms, mean {:.3} ms",
        took.len(),
        if exec { "helper per box" } else { "pre-forked" },
        took[0],
        at(0.1),
        at(0.5),
        at(0.9),
        mean
    );
    ExitCode::SUCCESS
}
