"""The chart the run makes: Superset 6's ECharts bar chart (``echarts_timeseries_bar``, "Bar Chart") of the
dataset's COUNT(*) metric by education, with the saved form data (``params``) and the query context that
Superset's explore page saves beside it (what ``GET /api/v1/chart/{id}/data/`` runs). The query context is
written here the way the chart's own buildQuery shapes one (x axis as the base-axis column, the metric, a
descending order on it, a pivot and a flatten), so that the explore page's query and the API's are the
same SQL, and the second is privdb's stored answer."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["VIZ", "bar_chart", "chart_data_query", "dashboard", "median_query"]

VIZ = "echarts_timeseries_bar"


def _form(dataset: int, x_axis: str, metric: str) -> dict[str, Any]:
    return {
        "datasource": f"{dataset}__table",
        "viz_type": VIZ,
        "x_axis": x_axis,
        "x_axis_sort_asc": True,
        "metrics": [metric],
        "groupby": [],
        "adhoc_filters": [],
        "row_limit": 10000,
        "order_desc": True,
        "orientation": "vertical",
        "color_scheme": "supersetColors",
        "show_legend": False,
        "show_value": False,
        "rich_tooltip": True,
        "y_axis_format": "SMART_NUMBER",
        "truncate_metric": True,
    }


def _query(form: dict[str, Any], dataset: int, x_axis: str, metric: Any, force: bool) -> dict[str, Any]:
    label = metric if isinstance(metric, str) else metric["label"]
    query = {
        "filters": [],
        "extras": {"having": "", "where": ""},
        "applied_time_extras": {},
        "columns": [
            {"columnType": "BASE_AXIS", "sqlExpression": x_axis, "label": x_axis, "expressionType": "SQL"}
        ],
        "metrics": [metric],
        "orderby": [[metric, False]],
        "annotation_layers": [],
        "row_limit": form["row_limit"],
        "series_columns": [],
        "series_limit": 0,
        "order_desc": True,
        "url_params": {},
        "custom_params": {},
        "custom_form_data": {},
        "time_offsets": [],
        "post_processing": [
            {
                "operation": "pivot",
                "options": {
                    "index": [x_axis],
                    "columns": [],
                    "aggregates": {label: {"operator": "mean"}},
                    "drop_missing_columns": False,
                },
            },
            {"operation": "flatten"},
        ],
    }
    return {
        "datasource": {"id": dataset, "type": "table"},
        "force": force,
        "queries": [query],
        "form_data": form,
        "result_format": "json",
        "result_type": "full",
    }


def bar_chart(dataset: int, name: str) -> dict[str, Any]:
    """The body of ``POST /api/v1/chart/``: COUNT(*) (the dataset's ``count`` metric) by education."""
    form = _form(dataset, "education", "count")
    return {
        "slice_name": name,
        "viz_type": VIZ,
        "datasource_id": dataset,
        "datasource_type": "table",
        "params": json.dumps(form),
        "query_context": json.dumps(_query(form, dataset, "education", "count", force=False)),
    }


def chart_data_query(dataset: int, force: bool) -> dict[str, Any]:
    """The same chart's query context, for ``POST /api/v1/chart/data`` (``force``: skip Superset's cache,
    as a dashboard's "Force refresh" does)."""
    form = _form(dataset, "education", "count")
    return _query(form, dataset, "education", "count", force=force)


def median_query(dataset: int) -> dict[str, Any]:
    """A chart query with a custom SQL metric ``MEDIAN(age)`` by sex: Superset writes it for PostgreSQL as
    ``PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age)``."""
    metric = {"expressionType": "SQL", "sqlExpression": "MEDIAN(age)", "label": "median_age"}
    form = _form(dataset, "sex", "median_age") | {"metrics": [metric]}
    return _query(form, dataset, "sex", metric, force=True)


def dashboard(chart: int, title: str, chart_name: str) -> dict[str, Any]:
    """The body of ``POST /api/v1/dashboard/``: one row holding the chart, full width."""
    ids = {"root": "ROOT_ID", "grid": "GRID_ID", "row": "ROW-privdb", "chart": f"CHART-{chart}"}
    position = {
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"type": "ROOT", "id": ids["root"], "children": [ids["grid"]]},
        "GRID_ID": {"type": "GRID", "id": ids["grid"], "children": [ids["row"]], "parents": [ids["root"]]},
        "HEADER_ID": {"type": "HEADER", "id": "HEADER_ID", "meta": {"text": title}},
        ids["row"]: {
            "type": "ROW",
            "id": ids["row"],
            "children": [ids["chart"]],
            "parents": [ids["root"], ids["grid"]],
            "meta": {"background": "BACKGROUND_TRANSPARENT"},
        },
        ids["chart"]: {
            "type": "CHART",
            "id": ids["chart"],
            "children": [],
            "parents": [ids["root"], ids["grid"], ids["row"]],
            "meta": {"chartId": chart, "width": 12, "height": 50, "sliceName": chart_name},
        },
    }
    return {
        "dashboard_title": title,
        "published": True,
        "position_json": json.dumps(position),
        "json_metadata": json.dumps({"color_scheme": "supersetColors", "refresh_frequency": 0}),
    }
