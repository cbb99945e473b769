"""The orchard's jobs."""

import dagster as dg

from memory_platform.defs.orchard.assets import orchard_proposals, orchard_snapshot

discover_projects_job = dg.define_asset_job(
    "discover_projects_job",
    selection=[orchard_proposals],
    description="Propose projects from the events for the orchard (paths, claude.ai projects, "
    "repeated chat titles) with their activity. Creates no project: a person accepts.",
)


snapshot_orchard_job = dg.define_asset_job(
    "snapshot_orchard_job",
    selection=[orchard_snapshot],
    description="Write the orchard's snapshot of a week (or a range of weeks): each project "
    "as it stood at the week's end, with the week's milestones and activity.",
)
