//! What several of the sandbox crate's test files share: the helper command they start boxes
//! with, and where a box's cgroups are.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use sandbox::{HELPER_ARG, HelperCommand};

/// The box helper, as the tests start it.
pub fn helper() -> HelperCommand {
    HelperCommand {
        program: env!("CARGO_BIN_EXE_sandbox-exec").into(),
        args: vec![HELPER_ARG.into()],
    }
}

/// The box cgroup directories process `pid` is in, as the host's cgroup namespace names them.
pub fn box_cgroup_dirs(pid: u32) -> Vec<PathBuf> {
    let v2_root = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "/sys/fs/cgroup"
    } else {
        "/sys/fs/cgroup/unified"
    };
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_id, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
            let root = match ctrls {
                "" => v2_root.to_owned(),
                "memory" | "pids" => format!("/sys/fs/cgroup/{ctrls}"),
                _ => return None,
            };
            let dir = Path::new(&root).join(path.trim_start_matches('/'));
            let name = dir.file_name()?.to_str()?;
            name.starts_with("boxmaker-").then_some(dir)
        })
        .collect()
}
