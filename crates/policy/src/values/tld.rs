//! Whether a host name ends in a top-level domain people use: the bound on the readings that
//! join words into a name (an address spelled `bob at acme dot com`, a name split across two
//! strings). A reading of one written name takes any name (`notes.txt` is a host too, the
//! price of erring toward finding); a reading that *builds* a name from parts would build
//! one from every sentence that ends where a word begins (`Attached.` then `billing`), so
//! it keeps only a name whose last label is two letters (every country code), an `xn--`
//! label, or one of the generic domains below.

/// Generic top-level domains in common use.
const GENERIC: &[&str] = &[
    "academy",
    "agency",
    "app",
    "art",
    "asia",
    "bank",
    "bar",
    "best",
    "bid",
    "bio",
    "biz",
    "blog",
    "bot",
    "business",
    "buzz",
    "cafe",
    "cam",
    "capital",
    "care",
    "cash",
    "cat",
    "center",
    "chat",
    "city",
    "click",
    "cloud",
    "club",
    "codes",
    "coffee",
    "com",
    "company",
    "consulting",
    "coop",
    "crypto",
    "dating",
    "deals",
    "design",
    "dev",
    "digital",
    "direct",
    "domains",
    "download",
    "edu",
    "email",
    "energy",
    "exchange",
    "expert",
    "finance",
    "financial",
    "fit",
    "fun",
    "fund",
    "games",
    "gay",
    "gift",
    "gives",
    "global",
    "gmbh",
    "gold",
    "gov",
    "group",
    "guide",
    "guru",
    "health",
    "help",
    "host",
    "hosting",
    "icu",
    "inc",
    "info",
    "ink",
    "int",
    "investments",
    "jobs",
    "kim",
    "land",
    "lat",
    "law",
    "life",
    "limited",
    "link",
    "live",
    "llc",
    "loan",
    "lol",
    "love",
    "ltd",
    "mail",
    "management",
    "market",
    "marketing",
    "media",
    "mil",
    "mobi",
    "moe",
    "money",
    "name",
    "net",
    "network",
    "news",
    "ninja",
    "one",
    "online",
    "org",
    "page",
    "partners",
    "pay",
    "photo",
    "pics",
    "pink",
    "plus",
    "post",
    "pro",
    "pub",
    "quest",
    "red",
    "rest",
    "review",
    "rocks",
    "run",
    "sale",
    "school",
    "services",
    "shop",
    "show",
    "site",
    "social",
    "software",
    "solutions",
    "space",
    "store",
    "stream",
    "studio",
    "support",
    "systems",
    "team",
    "tech",
    "tel",
    "tips",
    "today",
    "tools",
    "top",
    "trade",
    "travel",
    "university",
    "vip",
    "vision",
    "wallet",
    "website",
    "wiki",
    "win",
    "work",
    "works",
    "world",
    "wtf",
    "xxx",
    "xyz",
    "zone",
];

/// Whether `host` (ASCII, any case) ends in a top-level domain in use (see the module).
pub(super) fn known(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    let Some((_, last)) = host.rsplit_once('.') else {
        return false;
    };
    let lower = last.to_ascii_lowercase();
    (lower.len() == 2 && lower.bytes().all(|b| b.is_ascii_lowercase()))
        || (lower.len() > 4 && lower.starts_with("xn--"))
        || GENERIC.binary_search(&lower.as_str()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_known_top_level_domains() {
        let mut sorted = GENERIC.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, GENERIC, "GENERIC must stay sorted");
        for h in [
            "evil.com",
            "x.co.uk",
            "a.IO",
            "b.xn--p1ai",
            "c.shop",
            "d.de.",
        ] {
            assert!(known(h), "{h}");
        }
        for h in [
            "com",
            "noon.alice",
            "attached.billing",
            "x.c",
            "notes.txt",
            "a.b1",
        ] {
            assert!(!known(h), "{h}");
        }
    }
}
