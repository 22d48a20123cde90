"""Planners: turn live state into a reviewable plan. They read (through ``plans.live_state``), never write."""

from __future__ import annotations

from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.connectors import Action, plan_connectors
from mm2ctl.plans.planners.find_connectors import ALL_ROLES, find_pair_connectors, parse_roles
from mm2ctl.plans.planners.reset_mm2 import plan_reset_mm2, plan_truncate_offset_syncs
from mm2ctl.plans.planners.reset_offsets import Method, PartitionSelection, plan_reset_connector_offsets

__all__ = [
    "ALL_ROLES",
    "Action",
    "Method",
    "PartitionSelection",
    "PlanBuilder",
    "find_pair_connectors",
    "parse_roles",
    "plan_connectors",
    "plan_reset_connector_offsets",
    "plan_reset_mm2",
    "plan_truncate_offset_syncs",
]
