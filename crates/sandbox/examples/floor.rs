//! `floor`: the floor of a box's startup cost, for `bench/box-startup.sh`. Runs a command
//! behind only the kernel calls no box can skip — seven new namespaces with the box's id
//! maps, `no_new_privs`, the box's landlock rules and seccomp filter — and execs it as pid 1
//! of the new pid namespace. Not a sandbox: no mounts, no pivot_root, no limits.
//!
//! ```text
//! cargo run --release -p sandbox --example floor -- WORKSPACE CMD [ARGS...]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(workspace) = args.next() else {
        eprintln!("usage: floor WORKSPACE CMD [ARGS...]");
        return ExitCode::from(2);
    };
    let argv: Vec<String> = args.collect();
    if argv.is_empty() {
        eprintln!("usage: floor WORKSPACE CMD [ARGS...]");
        return ExitCode::from(2);
    }
    match sandbox::bench_floor(&argv, workspace.as_ref()) {
        Ok(code) => ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)),
        Err(e) => {
            eprintln!("floor: {e}");
            ExitCode::from(125)
        }
    }
}
