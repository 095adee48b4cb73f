"""Sample tasks: instructions, task-bundled skills and the agent's scripted actions per task.

Nothing here touches verifier, test, solution or reward paths, and no no-skill action names a
task skill or a skill root, so the healthy sample trials stay clean for the hack and leakage
audits.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str

    @property
    def skill_md(self) -> str:
        return f"---\nname: {self.name}\ndescription: {self.description}\n---\n{self.body}"


@dataclass(frozen=True)
class Action:
    """One agent step: a tool call (``shell``, ``write``, ``skill``) or the ``final`` answer."""

    kind: str
    say: str = ""  # visible assistant text sent with the call
    thought: str = ""  # reasoning text (ACP agent_thought)
    command: str = ""
    path: str = ""
    content: str = ""
    skill: str = ""
    output: str = ""  # the tool result the agent observes


@dataclass(frozen=True)
class Task:
    name: str
    instruction: str
    skills: tuple[Skill, ...]
    shell_steps: tuple[tuple[str, str, str], ...]  # (say, command, base output)
    write_step: tuple[str, str, str]  # (say, path, content)
    final_text: str
    filler: str  # kind of filler lines appended to shell outputs

    @property
    def skill_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)


_CITE_SCRIPT = """import re
from pathlib import Path

tex = Path('/app/paper/main.tex').read_text()
bib = Path('/app/paper/references.bib').read_text()
cited = set()
for group in re.findall(r'\\\\cite[pt]?\\{([^}]*)\\}', tex):
    cited.update(k.strip() for k in group.split(','))
entries = set(re.findall(r'^@\\w+\\{([^,]+),', bib, re.M))
out = Path('/app/output')
out.mkdir(exist_ok=True)
(out / 'missing_citations.txt').write_text(''.join(k + '\\n' for k in sorted(cited - entries)))
(out / 'unused_entries.txt').write_text(''.join(k + '\\n' for k in sorted(entries - cited)))
"""

_SALES_SCRIPT = """import pandas as pd

df = pd.read_csv('/app/data/sales.csv', parse_dates=['date'])
df['month'] = df['date'].dt.strftime('%Y-%m')
df['revenue'] = df['units'] * df['unit_price']
summary = (
    df.groupby(['region', 'month'])
    .agg(total_revenue=('revenue', 'sum'), orders=('order_id', 'nunique'))
    .reset_index()
    .sort_values(['region', 'month'])
)
summary['total_revenue'] = summary['total_revenue'].round(2)
summary.to_csv('/app/output/summary.csv', index=False)
print(len(summary), 'rows')
"""

_LOG_SCRIPT = """import json
import re
from collections import Counter
from datetime import datetime
from statistics import median

pat = re.compile(r'\\[(?P<ts>[^\\]]+)\\] "[^"]*" (?P<status>\\d{3})')
total, errors = Counter(), Counter()
for line in open('/app/logs/access.log'):
    m = pat.search(line)
    if not m:
        continue
    ts = datetime.strptime(m['ts'], '%d/%b/%Y:%H:%M:%S %z')
    key = ts.replace(minute=ts.minute - ts.minute % 5, second=0).isoformat()
    total[key] += 1
    errors[key] += m['status'].startswith('5')
rates = {k: errors[k] / total[k] for k in total}
base = median(rates.values())
out = [{'window_start': k, 'rate': round(r, 4)} for k, r in sorted(rates.items()) if r > 3 * base]
json.dump(out, open('/app/output/anomalies.json', 'w'), indent=2)
print(len(out), 'anomalous windows')
"""

TASKS: dict[str, Task] = {
    "citation-check": Task(
        name="citation-check",
        instruction=(
            "# Citation check\n\n"
            "The paper in `/app/paper/` cites sources with `\\cite{...}` in `main.tex` and lists "
            "them in `references.bib`.\n\n"
            "1. Write every citation key that is used in `main.tex` but has no entry in "
            "`references.bib` to `/app/output/missing_citations.txt`, one key per line, sorted.\n"
            "2. Write every bibliography key that is never cited to "
            "`/app/output/unused_entries.txt`, one key per line, sorted."
        ),
        skills=(
            Skill(
                "bibtex-tools",
                "Parse, validate and query BibTeX files (entry keys, fields, duplicates).",
                "# BibTeX tools\n\nUse `re.findall(r'^@\\w+\\{([^,]+),', text, re.M)` to list entry "
                "keys. Keys are case-sensitive; strip whitespace. Watch for `@string` and "
                "`@comment` blocks, which are not entries.\n",
            ),
            Skill(
                "latex-cite-scan",
                "Find citation commands (\\cite, \\citep, \\citet) and their keys in LaTeX sources.",
                "# LaTeX citation scan\n\nMatch `\\\\cite[pt]?\\{([^}]*)\\}` and split the group on "
                "commas. Ignore commented lines (starting with `%`).\n",
            ),
        ),
        shell_steps=(
            (
                "Let me look at the paper sources first.",
                "ls -la /app/paper",
                "total 48\ndrwxr-xr-x 2 agent agent  4096 Mar  2 09:14 .\n"
                "drwxr-xr-x 5 agent agent  4096 Mar  2 09:14 ..\n"
                "-rw-r--r-- 1 agent agent 21873 Mar  2 09:14 main.tex\n"
                "-rw-r--r-- 1 agent agent 14210 Mar  2 09:14 references.bib",
            ),
            (
                "Now the citation keys used in the text.",
                "grep -o '\\\\cite[pt]\\?{[^}]*}' /app/paper/main.tex | sort | uniq -c | head -40",
                "      2 \\cite{vaswani2017attention}\n      1 \\citep{devlin2019bert}\n"
                "      1 \\citet{brown2020language}",
            ),
        ),
        write_step=(
            "I'll write a small script that compares both key sets.",
            "/app/output/find_missing.py",
            _CITE_SCRIPT,
        ),
        final_text=(
            "Done. `/app/output/missing_citations.txt` lists the 3 keys cited in main.tex without "
            "a bibliography entry and `/app/output/unused_entries.txt` the 5 entries never cited."
        ),
        filler="cite",
    ),
    "sales-report": Task(
        name="sales-report",
        instruction=(
            "# Regional sales summary\n\n"
            "Aggregate `/app/data/sales.csv` by region and calendar month.\n\n"
            "Write `/app/output/summary.csv` with the columns "
            "`region,month,total_revenue,orders` (month as `YYYY-MM`, revenue = units x "
            "unit_price rounded to 2 decimals, orders = distinct order ids), sorted by region "
            "then month."
        ),
        skills=(
            Skill(
                "pandas-groupby",
                "Group, aggregate and pivot tabular data with pandas named aggregations.",
                "# pandas groupby\n\nPrefer `df.groupby(keys).agg(name=(col, func))` and "
                "`reset_index()`; use `nunique` for distinct counts and round only at the end.\n",
            ),
            Skill(
                "csv-validation",
                "Check CSV headers, types and row counts before and after a transformation.",
                "# CSV validation\n\nRead with explicit dtypes, assert the header, compare row "
                "counts and check for NaN in key columns before writing.\n",
            ),
        ),
        shell_steps=(
            (
                "First a look at the input file.",
                "head -5 /app/data/sales.csv && wc -l /app/data/sales.csv",
                "order_id,date,region,sku,units,unit_price\n"
                "100231,2025-01-03,EMEA,SKU-1042,3,49.99\n"
                "100232,2025-01-03,APAC,SKU-2210,1,199.00",
            ),
            (
                "Checking the column types and the regions.",
                "python3 -c \"import pandas as pd; df = pd.read_csv('/app/data/sales.csv'); "
                'print(df.dtypes); print(sorted(df.region.unique()))"',
                "order_id        int64\ndate           object\nregion         object\n"
                "sku            object\nunits           int64\nunit_price    float64\n"
                "dtype: object\n['AMER', 'APAC', 'EMEA', 'LATAM']",
            ),
        ),
        write_step=(
            "Writing the aggregation script.",
            "/app/output/build_summary.py",
            _SALES_SCRIPT,
        ),
        final_text=(
            "Wrote `/app/output/summary.csv` with 48 rows (4 regions x 12 months), columns "
            "region, month, total_revenue, orders, sorted by region then month."
        ),
        filler="csv",
    ),
    "log-anomaly": Task(
        name="log-anomaly",
        instruction=(
            "# Error-rate anomalies\n\n"
            "`/app/logs/access.log` is a combined-format web server log. Split it into 5-minute "
            "windows and find the windows whose HTTP 5xx rate is more than 3 times the median "
            "window rate.\n\n"
            "Write them to `/app/output/anomalies.json` as a list of "
            '`{"window_start": <ISO-8601>, "rate": <float>}` objects in time order.'
        ),
        skills=(
            Skill(
                "log-parsing",
                "Parse combined/common web server log lines into timestamp, request and status.",
                '# Log parsing\n\nCombined format: `host ident user [ts] "request" status bytes '
                '"referer" "agent"`. Parse the timestamp with `%d/%b/%Y:%H:%M:%S %z`.\n',
            ),
        ),
        shell_steps=(
            (
                "Let me inspect the log format.",
                "head -3 /app/logs/access.log && wc -l /app/logs/access.log",
                '10.0.3.17 - - [12/Mar/2026:10:00:02 +0000] "GET /api/v1/items?page=1 HTTP/1.1" '
                '200 5123 "-" "curl/8.5.0"',
            ),
            (
                "Counting status codes to get a feel for the error volume.",
                "awk '{print $9}' /app/logs/access.log | sort | uniq -c | sort -rn",
                "  18230 200\n   1211 404\n    388 500\n    102 503\n     41 502",
            ),
        ),
        write_step=(
            "Now the windowing script.",
            "/app/output/windows.py",
            _LOG_SCRIPT,
        ),
        final_text=(
            "Found 4 anomalous 5-minute windows; they are in `/app/output/anomalies.json` in "
            "time order with their 5xx rates."
        ),
        filler="log",
    ),
}

TASK_NAMES = tuple(TASKS)

_CITE_KEYS = ("smith", "chen", "garcia", "mueller", "tanaka", "okafor", "rossi", "kim")
_REGIONS = ("AMER", "APAC", "EMEA", "LATAM")
_PATHS = ("/api/v1/items", "/api/v1/orders", "/login", "/static/app.js", "/api/v1/search")
_STATUS = (200, 200, 200, 200, 200, 304, 404, 500, 503)


def _filler_line(kind: str, rng: random.Random, i: int) -> str:
    if kind == "cite":
        key = f"{rng.choice(_CITE_KEYS)}{2010 + rng.randrange(15)}{rng.choice('abcdefgh')}"
        return f"{rng.randrange(1, 4):>7} \\cite{{{key}}}"
    if kind == "csv":
        return (
            f"{100300 + i},2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d},"
            f"{rng.choice(_REGIONS)},SKU-{rng.randrange(1000, 3000)},{rng.randrange(1, 9)},"
            f"{rng.randrange(500, 30000) / 100:.2f}"
        )
    return (
        f"10.0.{rng.randrange(256)}.{rng.randrange(256)} - - "
        f"[12/Mar/2026:{10 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d} +0000] "
        f'"GET {rng.choice(_PATHS)} HTTP/1.1" {rng.choice(_STATUS)} {rng.randrange(200, 90000)}'
    )


def pad_output(base: str, kind: str, rng: random.Random, nbytes: int) -> str:
    """``base`` followed by task-like filler lines, cut to ``nbytes`` characters (never below base)."""
    parts = [base]
    size = len(base)
    i = 0
    while size < nbytes:
        line = _filler_line(kind, rng, i)
        parts.append(line)
        size += len(line) + 1
        i += 1
    text = "\n".join(parts)
    return text[: max(nbytes, len(base))]


def script(
    task: Task, *, with_skill: bool, n_tools: int, rng: random.Random, tool_output_bytes: int
) -> list[Action]:
    """``n_tools`` tool actions followed by the final answer.

    With-skill runs open the first task skill when there is room for it (``n_tools >= 2``);
    the rest cycles through the task's shell steps, with the write step second to last.
    """
    actions: list[Action] = []
    if with_skill and n_tools >= 2:
        skill = task.skills[0]
        actions.append(
            Action(
                kind="skill",
                say=f"The {skill.name} skill matches this task; loading it first.",
                thought=f"There is a {skill.name} skill for this; read it before starting.",
                skill=skill.name,
                output=skill.skill_md,
            )
        )
    remaining = n_tools - len(actions)
    for i in range(remaining):
        if remaining >= 3 and i == remaining - 2:
            say, path, content = task.write_step
            actions.append(
                Action(
                    kind="write",
                    say=say,
                    path=path,
                    content=content,
                    output=f"File created successfully at: {path}",
                )
            )
            continue
        say, command, base = task.shell_steps[i % len(task.shell_steps)]
        if i >= len(task.shell_steps):
            start = 1 + 40 * i
            command = f"{command.split(' && ')[0].split(' | ')[0]} | sed -n '{start},{start + 39}p'"
            say = ""
        actions.append(
            Action(
                kind="shell",
                say=say,
                thought="Check the input before writing anything." if i == 0 else "",
                command=command,
                output=pad_output(base, task.filler, rng, tool_output_bytes),
            )
        )
    actions.append(Action(kind="final", say=task.final_text))
    return actions


def _digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + files[rel].encode() + b"\0")
    return "sha256:" + h.hexdigest()


def task_files(task: Task) -> dict[str, str]:
    """The task tree the sample trials ran against (relative path -> text)."""
    files = {"instruction.md": task.instruction}
    for skill in task.skills:
        files[f"environment/skills/{skill.name}/SKILL.md"] = skill.skill_md
    return files


def task_digest(task: Task) -> str:
    """``sha256:<hex>`` over the generated task tree (this generator's recipe, not Benchflow's)."""
    return _digest(task_files(task))


def file_sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def write_tasks(tasks_dir: Path, names: tuple[str, ...] = TASK_NAMES) -> None:
    for name in names:
        for rel, text in task_files(TASKS[name]).items():
            path = tasks_dir / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
