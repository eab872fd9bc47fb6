"""The efficacy table: one row per suite, from replay.py's figures.

    python3 report.py target/efficacy/*.json     # the four-suite table of docs/efficacy.md

Standard library only, so it runs without the virtualenv.
"""

import json
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
    for label, key in (("packaged", "persons"), ("held-out", "heldout"), ("held-out new", "heldout_new"),
                       ("paraphrased", "paraphrased"), ("held-out r4", "heldout_r4"),
                       ("paraphrased r4", "paraphrased_r4"), ("held-out r5", "heldout_r5"),
                       ("paraphrased r5", "paraphrased_r5"), ("held-out r6", "heldout_r6"),
                       ("paraphrased r6", "paraphrased_r6")):
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


if __name__ == "__main__":
    summaries = []
    for path in sys.argv[1:]:
        with open(path) as f:
            summaries.append(json.load(f))
    print(table(summaries))
    if any(s.get("persons") for s in summaries):
        print()
        print(persons_table(summaries))
