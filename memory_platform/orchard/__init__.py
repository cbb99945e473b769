"""orchard: the portfolio of the user's projects (status, blockers, next action), kept from
milestones, beside the memory path. It answers what no single conversation can: where each
project stands, what blocks it, what moved this week, what to work on next.

Owns:
- projects.py: the projects and the rules every face keeps. Scope (a token for `work` sees
  work's projects only), a closed set of statuses, every change in an append-only history
  (who, when, before/after), nothing hard-deleted (archive), and milestone-only writes for
  agents: an agent's update must carry a milestone, and more than
  MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY a day per project is refused as churn,
  decided from the caller's Scope (an agent token, any MCP server) whatever the face.
  People (the CLI, a person's token over REST or in the dashboard) edit anything.
- reading.py: what a caller reads of cairn through a project (the linked conversations the
  routing file sends into its namespaces; all of them unscoped), which cairn projects a
  scoped caller may link, and orchard's egress (every text out through privacy.egress).
- activity.py: which cairn turns are a project's (Claude Code paths, claude.ai projects,
  conversation titles) and its activity per week.
- discovery.py: proposals from cairn, which wait for a person: nothing autonomous creates a
  project (the review gate's principle); accepting links the project to its namespace
  (routing rules by default) and repo; an unscoped person lists and decides them.
- week.py: "what should I work on this week": a transparent score (priority, status and
  blockers, days since last activity, deadline, next action), each part with its reason,
  and the project's last turns as evidence. Deterministic; phrased by an LLM when one is
  configured (prompts.py), the ranking staying the code's.
- snapshots.py: the portfolio as of each week (state replayed from the history, the
  week's activity), idempotent per week.
- models.py: the answer shapes REST and MCP share.

May import: vault (scope, namespaces, routing), query, ingest, llm, store, privacy,
settings. Never dream, Dagster or a face.
"""
