//! Labels (docs/spec.md §3.4): the runner labels each result, never the tool.
//!
//! `class = max(tool.class, class of every mount the tool read under)`; `untrusted` is the
//! tool's. A path is under the innermost mount whose `at` is a whole-component prefix of it
//! (the one the kernel shows there): `/data/notes/x` is under `/data/notes`, and not under
//! `/data/note`. Paths outside every configured mount (the workspace, `/usr`, `/tmp`) add
//! nothing: the workspace only ever holds what this session itself wrote, at a taint the
//! session already carries.

use std::path::{Path, PathBuf};

use proto::DataClass;

/// A mount point inside the box and the class of what is under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountClass {
    pub at: PathBuf,
    pub class: DataClass,
}

/// The class of the innermost mount `path` lies under, if any.
pub fn class_of(path: &Path, mounts: &[MountClass]) -> Option<DataClass> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.at))
        .max_by_key(|m| m.at.components().count())
        .map(|m| m.class)
}

/// The label class of a result that read `read`, for a tool whose floor is `floor`.
pub fn class_for_reads(floor: DataClass, read: &[PathBuf], mounts: &[MountClass]) -> DataClass {
    read.iter()
        .filter_map(|p| class_of(p, mounts))
        .fold(floor, DataClass::max)
}

/// The label class for a tool that may read anything its box can see (`run`, an MCP server):
/// the highest class of every mount in the box.
pub fn class_for_box(floor: DataClass, mounts: &[MountClass]) -> DataClass {
    mounts.iter().map(|m| m.class).fold(floor, DataClass::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts() -> Vec<MountClass> {
        vec![
            MountClass {
                at: "/data/notes".into(),
                class: DataClass::Internal,
            },
            MountClass {
                at: "/data/notes/hr".into(),
                class: DataClass::Secret,
            },
            MountClass {
                at: "/data/public".into(),
                class: DataClass::Public,
            },
        ]
    }

    #[test]
    fn the_innermost_mount_decides() {
        let m = mounts();
        assert_eq!(
            class_of(Path::new("/data/notes/a.txt"), &m),
            Some(DataClass::Internal)
        );
        assert_eq!(
            class_of(Path::new("/data/notes/hr/pay.csv"), &m),
            Some(DataClass::Secret)
        );
        assert_eq!(
            class_of(Path::new("/data/notes/hr"), &m),
            Some(DataClass::Secret)
        );
    }

    #[test]
    fn prefixes_count_whole_components_only() {
        let m = mounts();
        assert_eq!(class_of(Path::new("/data/notesX/a"), &m), None);
        assert_eq!(class_of(Path::new("/data/note"), &m), None);
        assert_eq!(class_of(Path::new("/work/a"), &m), None);
    }

    #[test]
    fn a_label_is_the_max_of_the_floor_and_every_read() {
        let m = mounts();
        let reads = vec![
            PathBuf::from("/work/x"),
            PathBuf::from("/data/notes/hr/pay.csv"),
        ];
        assert_eq!(
            class_for_reads(DataClass::Public, &reads, &m),
            DataClass::Secret
        );
        assert_eq!(
            class_for_reads(DataClass::Confidential, &[], &m),
            DataClass::Confidential
        );
        // A floor above every mount stays.
        assert_eq!(
            class_for_reads(DataClass::Secret, &[PathBuf::from("/data/public/x")], &m),
            DataClass::Secret
        );
    }

    #[test]
    fn a_tool_that_can_read_the_whole_box_gets_the_highest_mount() {
        assert_eq!(
            class_for_box(DataClass::Public, &mounts()),
            DataClass::Secret
        );
        assert_eq!(class_for_box(DataClass::Internal, &[]), DataClass::Internal);
    }
}
