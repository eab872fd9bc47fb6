//! What a config says that will not work, found when a person runs `check` or `doctor`
//! rather than at the first call: a mount whose host path is not there (every box would fail
//! to start), and a grant or a label rule that names no tool boxmaker has (a typo that
//! silently grants or labels nothing), with the closest tool name, and a secret whose file
//! is not private or whose variable is not set.

use catalog::{Catalog, ToolsFile};
use config::{Config, ToolKind};

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// True when boxes cannot run as configured (`doctor` then fails).
    pub blocks_boxes: bool,
    pub text: String,
}

/// Every finding for `cfg`, in file order (mounts, then grants, then label rules).
pub fn lint(cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    for m in &cfg.mounts {
        match std::fs::metadata(&m.host) {
            Ok(md) if md.is_dir() || md.is_file() => {}
            Ok(_) => out.push(Finding {
                blocks_boxes: true,
                text: format!(
                    "mount {}: its host path {} is neither a directory nor a file; every box \
                     would fail to start",
                    m.at.display(),
                    m.host.display()
                ),
            }),
            Err(e) => out.push(Finding {
                blocks_boxes: true,
                text: format!(
                    "mount {}: its host path {} cannot be used ({}); every box would fail to \
                     start until it exists",
                    m.at.display(),
                    m.host.display(),
                    if e.kind() == std::io::ErrorKind::NotFound {
                        "it does not exist".to_string()
                    } else {
                        e.to_string()
                    }
                ),
            }),
        }
    }
    // A secret that will not read, found by looking (the metadata of its file, whether its
    // variable is set), never by reading it: a lint runs in the front's process too.
    for sec in &cfg.secrets {
        let why = match &sec.source {
            config::SecretSource::File(path) => secrets::check_file(&sec.name, path)
                .err()
                .map(|e| e.to_string()),
            config::SecretSource::Env(var) => std::env::var_os(var).is_none().then(|| {
                format!(
                    "secret {:?} is read from the variable {var}, which is not set here (the \
                     runner reads it from the environment of the process that starts the gate)",
                    sec.name
                )
            }),
            config::SecretSource::Command(_) => None,
        };
        if let Some(why) = why {
            out.push(Finding {
                blocks_boxes: false,
                text: format!("{why}; a tool that uses it fails until it can be read"),
            });
        }
    }
    for t in cfg.unserved_network_tools() {
        out.push(Finding {
            blocks_boxes: false,
            text: format!(
                "tool {} has network = true but no [[egress]] rule it may use: its box can reach nothing (add an [[egress]] rule, or name one in its `egress = [...]`)",
                t.name
            ),
        });
    }
    for (i, j) in cfg.overlapping_mounts() {
        let (a, b) = (&cfg.mounts[i], &cfg.mounts[j]);
        out.push(Finding {
            blocks_boxes: false,
            text: format!(
                "mounts {} ({}) and {} ({}) overlap on the host: a file in both is labelled \
                 by the higher class, whichever way it is read (note)",
                a.at.display(),
                a.class,
                b.at.display(),
                b.class
            ),
        });
    }
    // The downstream tools as last discovered, if discovery ran (a lint never starts one).
    let catalog = ToolsFile::load(&cfg.gate.state)
        .map(|f| Catalog::build(cfg, &f))
        .unwrap_or_default();
    // A server's own name is what its resources and prompts are asked for under (docs/spec.md
    // §5): a grant or a label rule may name it.
    let mut names: Vec<String> = cfg
        .tools
        .iter()
        .filter(|t| matches!(t.kind, ToolKind::Builtin(_)) || t.kind.is_server())
        .map(|t| t.name.clone())
        .collect();
    names.extend(catalog.entries().iter().map(|e| e.exposed.clone()));
    // A pattern that names nothing: `None` when it may name a tool, else the closest name.
    let names_nothing = |pattern: &policy::Pattern| -> Option<String> {
        if names.iter().any(|n| pattern.matches(n))
            || could_match_undiscovered(cfg, &catalog, pattern)
        {
            return None;
        }
        let closest = names
            .iter()
            .map(|n| (distance(pattern.as_str(), n), n))
            .filter(|(d, n)| *d <= (n.len() / 3).max(2))
            .min();
        Some(closest.map_or(String::new(), |(_, n)| format!("; did you mean {n:?}?")))
    };
    for (i, g) in cfg.grants.iter().enumerate() {
        if let Some(closest) = names_nothing(&g.tool) {
            out.push(Finding {
                blocks_boxes: false,
                text: format!(
                    "grant {} (tool {:?}) names no configured tool and matches no downstream \
                     tool, so it grants nothing{closest}",
                    i + 1,
                    g.tool.as_str(),
                ),
            });
        }
    }
    // A label rule for no tool is a warning, not an error: a server may offer it later.
    for (i, r) in cfg.labels.iter().enumerate() {
        if let Some(closest) = names_nothing(&r.tool) {
            out.push(Finding {
                blocks_boxes: false,
                text: format!(
                    "label rule {} (tool {:?}) names no configured tool and matches no \
                     downstream tool, so it labels nothing{closest}",
                    i + 1,
                    r.tool.as_str(),
                ),
            });
        }
    }
    out
}

/// Whether `pattern` could match a tool of a downstream server whose tools are not
/// discovered yet: its exposed names are `PREFIX_…`, so a pattern whose literal start agrees
/// with `PREFIX_` may match one.
fn could_match_undiscovered(cfg: &Config, catalog: &Catalog, pattern: &policy::Pattern) -> bool {
    cfg.tools.iter().any(|t| {
        let Some(prefix) = t.exposed_prefix() else {
            return false;
        };
        let discovered = catalog.entries().iter().any(|e| e.server == t.name);
        if discovered {
            return false;
        }
        let start = format!("{prefix}_");
        let lit = pattern.literal_prefix();
        prefix.is_empty() || lit.starts_with(&start) || start.starts_with(lit)
    })
}

/// The edit distance between `a` and `b` (Levenshtein, by bytes; names are ASCII).
fn distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[gate]\nstate = \"{}\"\n{text}",
            dir.path().join("s").display()
        );
        config::parse(&text, "t.toml", dir.path()).unwrap()
    }

    #[test]
    fn a_missing_mount_blocks_boxes() {
        let c = cfg("[[mount]]\nhost = \"/nonexistent/boxmaker-notes\"\nat = \"/data/n\"\n");
        let f = lint(&c);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].blocks_boxes);
        assert!(f[0].text.contains("does not exist"), "{}", f[0].text);
    }

    #[test]
    fn a_grant_for_no_tool_is_named_with_the_closest_one() {
        let c = cfg("[[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\
             [[tool]]\nname = \"fs\"\nmcp = [\"/usr/bin/true\"]\n\
             [[grant]]\ntool = \"raed_file\"\neffect = \"allow\"\n\
             [[grant]]\ntool = \"read_*\"\neffect = \"allow\"\n\
             [[grant]]\ntool = \"fs_*\"\neffect = \"allow\"\n\
             [[grant]]\ntool = \"*\"\neffect = \"deny\"\n\
             [[grant]]\ntool = \"zzzzzzzzzz\"\neffect = \"allow\"\n");
        let f = lint(&c);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].text.contains("grant 1") && f[0].text.contains("did you mean \"read_file\""));
        assert!(!f[0].blocks_boxes);
        assert!(f[1].text.contains("grant 5") && !f[1].text.contains("did you mean"));
    }

    #[test]
    fn a_label_rule_for_no_tool_is_a_warning_with_the_closest_one() {
        let c = cfg("[[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\
             [[tool]]\nname = \"fs\"\nmcp = [\"/usr/bin/true\"]\n\
             [[label]]\ntool = \"read_fil\"\nclass = \"secret\"\n\
             [[label]]\ntool = \"fs_read_*\"\nuntrusted = true\n\
             [[label]]\ntool = \"read_file\"\nclass = \"internal\"\n");
        let f = lint(&c);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(!f[0].blocks_boxes);
        assert!(
            f[0].text.contains("label rule 1 (tool \"read_fil\")")
                && f[0]
                    .text
                    .contains("so it labels nothing; did you mean \"read_file\"?"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance("raed_file", "read_file"), 2);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("run", "run"), 0);
    }
}
