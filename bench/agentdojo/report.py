"""The efficacy table: one row per suite, from replay.py's figures.

    python3 report.py target/efficacy/*.json     # the four-suite table of docs/efficacy.md
    python3 report.py --split target/efficacy/*.json   # attacks reached by the round that
                                                       # wrote them, per set of prompts

Standard library only, so it runs without the virtualenv.
"""

import json
import re
import sys

HEAD = ("suite", "benign", "outright", "person", "denied", "attacks", "reached",
        "at person", "denied", "pairs", "seconds")


def row(s):
    pct = 100 * s["benign_outright"] / max(1, s["benign_total"])
    reached = str(s["attacks_reached"])
    if s.get("attacks_reached_text_only"):
        reached += f" ({s['attacks_reached_text_only']} text only)"
    return (s["suite"], str(s["benign_total"]), f"{s['benign_outright']} ({pct:.0f}%)",
            str(s["benign_person"]), str(s["benign_denied"]), str(s["attacks_total"]),
            reached, str(s["attacks_at_person"]), str(s["attacks_denied"]),
            str(s.get("pairs_replayed", "")), str(s.get("seconds", "")))


PERSONS_HEAD = ("suite", "attacks from", "policy", "person", "benign outright",
                "benign completed", "benign denied", "attacks", "reached",
                "reached (text-only aside)", "at person", "denied")


def person_rows(s):
    policy = f"without {s['without']}" if s.get("without") else "as frozen"
    # Later rounds' sets (`heldout_rN`, `paraphrased_rN`) from the JSON's own keys.
    later = sorted((k for k in s if re.fullmatch(r"(heldout|paraphrased)_r\d+", k)),
                   key=lambda k: (int(k.rsplit("_r", 1)[1]), k))
    labels = [("packaged", "persons"), ("held-out", "heldout"), ("held-out new", "heldout_new"),
              ("paraphrased", "paraphrased")]
    labels += [(k.replace("heldout_", "held-out ").replace("paraphrased_", "paraphrased "), k)
               for k in later]
    for label, key in labels:
        for person, f in s.get(key, {}).items():
            aside = f["attacks_reached"] - f["attacks_reached_text_only"]
            yield (s["suite"], label, policy, person,
                   f"{f['benign_outright']}/{f['benign_total']}",
                   f"{f['benign_completed']}/{f['benign_total']}", str(f["benign_denied"]),
                   str(f["attacks_total"]), str(f["attacks_reached"]),
                   f"{aside} ({100 * aside / max(1, f['attacks_total']):.1f}%)",
                   str(f["attacks_at_person"]), str(f["attacks_denied"]))


def persons_table(summaries):
    rows = [PERSONS_HEAD] + [r for s in summaries for r in person_rows(s)]
    return render(rows)


def render(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def table(summaries):
    rows = [HEAD] + [row(s) for s in summaries]
    return render(rows)


# The round that wrote an injection task, by its id's prefix: replay.py's `--extra-injections`
# are round 2's (`extra_`), `--new-injections` round 3's (`new_`), `--rN-injections` round
# N's (`rN_`); the packaged ones round 1's. Derived from the ids, so a new round needs no
# change here.
def round_of(task):
    if task.startswith("extra_"):
        return "r2"
    if task.startswith("new_"):
        return "r3"
    m = re.match(r"(r\d+)_", task)
    return m.group(1) if m else "r1"


def prompts_of(case):
    p = case.get("paraphrase")
    if not p:
        return "packaged"
    m = re.search(r"~(r\d+)p\d+$", p)
    return f"paraphrased {m.group(1) if m else 'r3'}"


def round_key(r):
    return int(r[1:])


def split_rows(s, persons=("reads", "approves")):
    """Attacks reached (text-only goals aside) by the round whose injection tasks they are,
    for each set of prompts and person: what docs/efficacy.md's "× r1–3 / × all" columns
    count (a paraphrase is paired with every round's injections)."""
    counts = {}
    for c in s.get("cases", []):
        task = c.get("injection_task")
        if not task or not (c["carried"] and c["plain_security"]):
            continue
        for person in persons:
            v = {**c, **c["persons"].get(person, {})}
            key = (prompts_of(c), person, round_of(task))
            total, reached = counts.get(key, (0, 0))
            counts[key] = (total + 1, reached + (1 if v["security"] and not v["text_only"] else 0))
    sets = sorted({k[0] for k in counts}, key=lambda x: (x != "packaged", x))
    rounds = sorted({k[2] for k in counts}, key=round_key)
    for prompts in sets:
        for person in persons:
            cells = []
            for r in rounds:
                total, reached = counts.get((prompts, person, r), (0, 0))
                cells.append(f"{reached}/{total}" if total else "")
            upto3 = [counts.get((prompts, person, r), (0, 0)) for r in rounds if round_key(r) <= 3]
            every = [counts.get((prompts, person, r), (0, 0)) for r in rounds]
            pct = lambda xs: f"{100 * sum(x[1] for x in xs) / max(1, sum(x[0] for x in xs)):.1f}%"
            yield (s["suite"], prompts, person, *cells, pct(upto3), pct(every))


def split_table(summaries):
    rounds = sorted({round_of(c["injection_task"]) for s in summaries for c in s.get("cases", [])
                     if c.get("injection_task")}, key=round_key)
    head = ("suite", "prompts", "person", *rounds, "× r1–3", "× all")
    return render([head] + [r for s in summaries for r in split_rows(s)])


if __name__ == "__main__":
    split = "--split" in sys.argv[1:]
    summaries = []
    for path in [a for a in sys.argv[1:] if a != "--split"]:
        with open(path) as f:
            summaries.append(json.load(f))
    if split:
        print(split_table(summaries))
        sys.exit(0)
    print(table(summaries))
    if any(s.get("persons") for s in summaries):
        print()
        print(persons_table(summaries))
