//! Landlock rules that repeat the mount table: a second, independent wall in case a mount is
//! ever wrong. Derived from the same [`MountEntry`] list the mounts come from; paths are box
//! paths (rules are added after `pivot_root`).
//!
//! | entry                         | access                                         |
//! |-------------------------------|------------------------------------------------|
//! | `/` (the root tmpfs)          | list directories only                          |
//! | `/etc`                        | read (the written passwd/group/hosts)          |
//! | read-only bind                | read, list, execute                            |
//! | read-write bind, `/tmp`, shm  | everything                                     |
//! | device node, `/dev/pts`       | read, write, ioctl                             |
//! | `/proc`                       | read, list                                     |
//!
//! With ABI 6 or later the box is also scoped: no signals to, and no abstract unix sockets
//! of, processes outside it.

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::error::{Error, Result};
use crate::mounts::{MountEntry, MountKind};

/// Newest ABI whose rights this crate has been reviewed against. Older kernels get the subset
/// they support (best effort); a kernel without landlock gets nothing, which `apply` reports.
const TARGET_ABI: ABI = ABI::V6;

/// The rules for a table, as (box path, access) pairs.
pub fn rules(table: &[MountEntry]) -> Vec<(std::path::PathBuf, BitFlags<AccessFs>)> {
    let all = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let exec_read = read | AccessFs::Execute;
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
    let mut out = vec![
        ("/".into(), BitFlags::from(AccessFs::ReadDir)),
        ("/etc".into(), read),
    ];
    for e in table {
        let access = match &e.kind {
            MountKind::Bind { write: true, .. } | MountKind::Tmpfs { writable: true } => all,
            MountKind::Bind {
                write: false,
                dir: true,
                ..
            } => exec_read,
            MountKind::Bind {
                write: false,
                dir: false,
                ..
            } => AccessFs::ReadFile | AccessFs::Execute,
            MountKind::Device { .. } => device,
            MountKind::Devpts => device | AccessFs::ReadDir,
            MountKind::Proc => read,
            MountKind::Tmpfs { writable: false } => BitFlags::from(AccessFs::ReadDir),
            // Kept entries are read-only by their mount, inside a writable bind's rule.
            // A pinned directory keeps the rule of the writable bind it lies in.
            MountKind::Symlink { .. }
            | MountKind::File { .. }
            | MountKind::Keep
            | MountKind::Pin => continue,
        };
        out.push((e.at.clone(), access));
    }
    out
}

/// Restricts the calling process (and what it later runs) to `table`. Returns the ABI
/// version enforced. `required`: a kernel without landlock is an error, not a downgrade.
pub fn apply(table: &[MountEntry], required: bool) -> Result<i32> {
    let abi = abi_version();
    if abi <= 0 {
        return if required {
            Err(Error::Unavailable {
                protection: "landlock",
                reason: "the kernel does not enforce landlock".into(),
            })
        } else {
            Ok(0)
        };
    }
    let err = |e: landlock::RulesetError| Error::Landlock(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(err)?;
    if abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(TARGET_ABI)).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    for (path, access) in rules(table) {
        let fd = match PathFd::new(&path) {
            Ok(fd) => fd,
            // A path the mount step did not create has nothing to allow.
            Err(_) => continue,
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(err)?;
    }
    let status = created.restrict_self().map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced && required {
        return Err(Error::Unavailable {
            protection: "landlock",
            reason: "ruleset not enforced".into(),
        });
    }
    Ok(abi)
}

/// The landlock ABI version of the running kernel, or a value <= 0 when unavailable.
pub fn abi_version() -> i32 {
    crate::sys::landlock_abi()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    #[test]
    fn test_landlock_rules_repeat_mount_table_modes() {
        let dir = tempfile::tempdir().unwrap();
        let table =
            crate::mounts::mount_table(&Spec::new(vec!["true".into()], dir.path())).unwrap();
        let rules = rules(&table);
        let get = |p: &str| {
            rules
                .iter()
                .find(|(q, _)| q == std::path::Path::new(p))
                .map(|(_, a)| *a)
                .unwrap()
        };
        assert!(get("/work").contains(AccessFs::WriteFile | AccessFs::MakeReg));
        assert!(get("/tmp").contains(AccessFs::WriteFile));
        assert!(!get("/usr").intersects(AccessFs::from_write(TARGET_ABI)));
        assert!(get("/usr").contains(AccessFs::Execute));
        assert!(!get("/proc").contains(AccessFs::WriteFile));
        assert_eq!(get("/"), BitFlags::from(AccessFs::ReadDir));
        assert!(
            !rules
                .iter()
                .any(|(p, _)| p.starts_with("/root") || p.starts_with("/home"))
        );
    }
}
