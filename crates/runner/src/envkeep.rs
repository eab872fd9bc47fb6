//! What a kept `.envrc` names in its directory (docs/spec.md §4, "What a writable mount
//! keeps"). direnv runs `.envrc` when the person `cd`s into the directory — that is why the
//! default list keeps it — but `.envrc` is rarely the whole of what runs: `use flake`
//! evaluates `flake.nix` (its `shellHook` runs in the person's shell), nix-direnv reuses the
//! environment it cached in `.direnv` by `eval`ing it, `source_env`, `dotenv` and `source`
//! read other files, and `PATH_add bin` (or `layout node`) puts a directory of the work tree
//! first on the person's `PATH`, so a box that writes `bin/ls` chooses what their next `ls`
//! runs. Each of those is kept too, by its top name: with `.envrc` read-only and these
//! writable, a box would still choose what the person's next `cd` runs.
//!
//! Read as text, never run; bounded (the file's size); no symlink followed. What it cannot
//! read it does not keep — a name built at run time (`PATH_add "$(pick)"`) — which the
//! spec says.
//!
//! **Must never:** run direnv, a shell or nix.

use std::path::{Component, Path};

/// Where direnv keeps what its layouts and nix-direnv's cache made (`direnv_layout_dir`):
/// the cached environment there is `eval`ed on the next `cd`.
const LAYOUT_DIR: &str = ".direnv";

/// The names in `tree`'s top directory that the `.envrc` there names as something the
/// person's next `cd` runs or puts on their `PATH` (not `.envrc` itself), sorted, each
/// once. Where `tree` has no `.envrc` of its own but a directory above it has (direnv
/// loads the nearest), that one is read, and what it names inside `tree` kept.
pub fn named_by_envrc(tree: &Path) -> Vec<String> {
    let Some((dir, text)) = tree.ancestors().find_map(|d| {
        let meta = std::fs::symlink_metadata(d.join(".envrc")).ok()?;
        meta.is_file()
            .then(|| crate::gitkeep::read_small(&d.join(".envrc")))
            .flatten()
            .map(|t| (d.to_path_buf(), t))
    }) else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    let mut note = |rel: &str| {
        let rel = rel
            .trim_start_matches("$PWD/")
            .trim_start_matches("${PWD}/")
            .trim_start_matches("$(pwd)/");
        if rel.is_empty() || rel.starts_with(['/', '~', '$', '-']) || rel.contains("://") {
            return;
        }
        let path = config::own::lexical(&dir.join(rel));
        if let Ok(inside) = path.strip_prefix(tree)
            && let Some(Component::Normal(top)) = inside.components().next()
            && let Some(top) = top.to_str()
            && top != ".envrc"
        {
            names.push(top.to_owned());
        }
    };
    note(LAYOUT_DIR);
    for command in commands(&text) {
        let words: Vec<&str> = command.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["use", "flake", rest @ ..] | ["use_flake", rest @ ..] => {
                for n in ["flake.nix", "flake.lock", "default.nix", "shell.nix"] {
                    note(n);
                }
                // `use flake ./nix#dev` or `path:./nix`: a flake of the work tree.
                for arg in rest {
                    let arg = arg.trim_start_matches("path:");
                    if arg.starts_with("./") || arg.starts_with("../") {
                        note(arg.split('#').next().unwrap_or(arg));
                    }
                }
            }
            ["use", "nix", rest @ ..] | ["use_nix", rest @ ..] => {
                for n in ["shell.nix", "default.nix"] {
                    note(n);
                }
                for arg in rest.iter().filter(|a| !a.starts_with('-')) {
                    note(arg);
                }
            }
            ["use", "devenv", ..] => {
                for n in [
                    "devenv.nix",
                    "devenv.yaml",
                    "devenv.lock",
                    "devenv.local.nix",
                    ".devenv",
                ] {
                    note(n);
                }
            }
            ["layout", "node", ..] => note("node_modules"),
            ["layout", kind, ..] if matches!(*kind, "poetry" | "pipenv" | "uv") => note(".venv"),
            ["dotenv" | "dotenv_if_exists"] => note(".env"),
            ["path_add" | "PATH_rm", _var, dirs @ ..] => dirs.iter().for_each(|d| note(d)),
            [
                "source_env"
                | "source_env_if_exists"
                | "source"
                | "."
                | "dotenv"
                | "dotenv_if_exists"
                | "watch_file"
                | "watch_dir"
                | "PATH_add"
                | "MANPATH_add"
                | "load_prefix"
                | "source_url",
                args @ ..,
            ] => args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .for_each(|a| note(a)),
            _ => {}
        }
        // Any word naming a path of the work tree by `$PWD` (`export PATH=$PWD/bin:$PATH`).
        for word in &words {
            for part in word.split([':', '=']) {
                if part.starts_with("$PWD/") || part.starts_with("${PWD}/") {
                    note(part);
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The simple commands of a shell script, each as its words with quotes taken off: split at
/// newlines, `;`, `&&`, `||`, `|`, `(`, `)`, `{`, `}`; a `#` at a word's start begins a
/// comment. A reading, not a parse: a word built at run time stays as written.
fn commands(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut command: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    let end_word = |command: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            command.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else if c == '\\' && q == '"' {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            } else {
                word.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                in_word = true;
            }
            '\\' => {
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    word.push(n);
                    in_word = true;
                }
            }
            '#' if !in_word => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                end_word(&mut command, &mut word, &mut in_word);
                out.push(std::mem::take(&mut command));
            }
            '\n' | ';' | '&' | '|' | '(' | ')' | '{' | '}' => {
                end_word(&mut command, &mut word, &mut in_word);
                out.push(std::mem::take(&mut command));
            }
            c if c.is_whitespace() => end_word(&mut command, &mut word, &mut in_word),
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut command, &mut word, &mut in_word);
    out.push(command);
    out.retain(|c| !c.is_empty());
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn envrc(text: &str) -> (tempfile::TempDir, Vec<String>) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(".envrc"), text).unwrap();
        let names = named_by_envrc(d.path());
        (d, names)
    }

    #[test]
    fn nothing_without_an_envrc() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("a");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(named_by_envrc(&sub).is_empty());
    }

    #[test]
    fn a_flake_its_cache_and_what_is_put_on_path_are_named() {
        let (_d, names) = envrc(
            "# a nix project\nuse flake . --impure\nPATH_add bin\n\
             export PATH=\"$PWD/tools/x:$PATH\"; watch_file nix/*.nix\n\
             source_env_if_exists .envrc.local\ndotenv\n",
        );
        assert_eq!(
            names,
            vec![
                ".direnv",
                ".env",
                ".envrc.local",
                "bin",
                "default.nix",
                "flake.lock",
                "flake.nix",
                "nix",
                "shell.nix",
                "tools"
            ]
        );
    }

    #[test]
    fn layouts_and_sources_name_their_directories_not_absolute_or_home_paths() {
        let (_d, names) = envrc(
            "layout node && layout poetry\nsource .venv/bin/activate\n\
             . /etc/profile; source ~/x; PATH_add \"$HOME/bin\"\nuse flake ./nix#dev\n",
        );
        assert_eq!(
            names,
            vec![
                ".direnv",
                ".venv",
                "default.nix",
                "flake.lock",
                "flake.nix",
                "nix",
                "node_modules",
                "shell.nix"
            ]
        );
    }

    #[test]
    fn the_nearest_envrc_above_is_read_for_what_it_names_inside() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(".envrc"),
            "PATH_add frontend/bin\nPATH_add backend/bin\n",
        )
        .unwrap();
        let front = d.path().join("frontend");
        std::fs::create_dir_all(&front).unwrap();
        assert_eq!(named_by_envrc(&front), vec!["bin"]);
    }

    #[test]
    fn commands_are_read_as_a_shell_splits_them() {
        assert_eq!(
            commands("a 'b c' \"d\\\"e\" # f\ng;h && i|j\n"),
            vec![
                vec!["a".to_string(), "b c".into(), "d\"e".into()],
                vec!["g".into()],
                vec!["h".into()],
                vec!["i".into()],
                vec!["j".into()],
            ]
        );
    }
}
