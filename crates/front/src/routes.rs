//! Which server a client's resource or prompt request goes to (docs/spec.md §5, "Resources
//! and prompts"): what each server listed to this session, kept in the session's front
//! ([`Routes`]), and the one server a request may go to. The requests themselves are
//! `offers`'.

use std::collections::HashMap;

/// What this session was shown, by which server.
#[derive(Debug, Default)]
pub struct Routes {
    resources: HashMap<String, String>,
    /// A template's text up to its first `{`, and the server that listed it.
    templates: Vec<(String, String)>,
    prompts: HashMap<String, String>,
}

/// What a request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Resource,
    Prompt,
}

impl Routes {
    /// Remembers that `server` listed resource `uri`.
    pub fn resource(&mut self, uri: &str, server: &str) {
        self.resources.insert(uri.to_string(), server.to_string());
    }

    /// Remembers that `server` listed the resource template `template`.
    pub fn template(&mut self, template: &str, server: &str) {
        let fixed = template.split('{').next().unwrap_or_default();
        if !fixed.is_empty() {
            self.templates.push((fixed.to_string(), server.to_string()));
        }
    }

    /// Remembers that `server` listed prompt `name`.
    pub fn prompt(&mut self, name: &str, server: &str) {
        self.prompts.insert(name.to_string(), server.to_string());
    }

    /// The server `key` (a URI or a prompt's name) goes to, among `servers` (those the
    /// grants could let this session ask); `None` when no single one is known.
    pub fn route(&self, kind: Kind, key: &str, servers: &[String]) -> Option<String> {
        let listed = match kind {
            Kind::Resource => self.resources.get(key).cloned().or_else(|| {
                self.templates
                    .iter()
                    .filter(|(fixed, _)| key.starts_with(fixed.as_str()))
                    .max_by_key(|(fixed, _)| fixed.len())
                    .map(|(_, s)| s.clone())
            }),
            Kind::Prompt => self.prompts.get(key).cloned(),
        };
        match (listed, servers) {
            (Some(s), _) if servers.contains(&s) => Some(s),
            (None, [only]) => Some(only.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Vec<String> {
        vec!["docs".into(), "web".into()]
    }

    #[test]
    fn a_uri_goes_to_the_server_that_listed_it_and_never_to_a_guess() {
        let mut r = Routes::default();
        r.resource("file:///a.txt", "docs");
        r.template("https://example.org/{page}", "web");
        r.template("https://example.org/wiki/{page}", "docs");
        assert_eq!(
            r.route(Kind::Resource, "file:///a.txt", &two()),
            Some("docs".into())
        );
        assert_eq!(
            r.route(Kind::Resource, "https://example.org/wiki/x", &two()),
            Some("docs".into())
        );
        assert_eq!(
            r.route(Kind::Resource, "https://example.org/x", &two()),
            Some("web".into())
        );
        // Two servers, and neither listed it: no server is sent the URI.
        assert_eq!(r.route(Kind::Resource, "file:///b.txt", &two()), None);
        // A server the grants no longer let this session ask is not one to route to.
        assert_eq!(
            r.route(Kind::Resource, "file:///a.txt", &["web".into()]),
            None
        );
    }

    #[test]
    fn with_one_server_everything_goes_to_it() {
        let r = Routes::default();
        let one = vec!["everything".to_string()];
        assert_eq!(
            r.route(Kind::Prompt, "anything", &one),
            Some("everything".into())
        );
        assert_eq!(r.route(Kind::Prompt, "anything", &[]), None);
    }
}
