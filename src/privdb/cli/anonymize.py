"""``privdb anonymize``: publish an anonymised table (k-anonymous, l-diverse, t-close), with its report. The
commands that measure any table (``check``, ``risk``) are privdb.cli.measure; the options they share,
privdb.cli.table_options."""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from privdb.cli.anonymize_parts import (
    MODEL_KEYS,
    SEARCH_KEYS,
    as_aggregated,
    check_target,
    check_written,
    classifier,
    database_table,
    number,
    pairs,
    shuffler,
)
from privdb.cli.core import app, console, friendly
from privdb.cli.measure import delta_pair as _pair
from privdb.cli.table_options import (
    BetaOption,
    DeltaDisclosureOption,
    EnhancedBetaOption,
    EstimatorOption,
    FixLabelsOption,
    HierarchiesOption,
    KMapEstimatorOption,
    PopulationOption,
    QiOption,
    SamplingFractionOption,
    SensitiveOption,
    SignificanceOption,
    Steps,
    check_output,
    hierarchy_frames,
    print_held_out,
    qi_columns,
    writable,
)
from privdb.errors import InvalidParameter

Metric = Literal[
    "loss", "geometric-loss", "entropy", "monotonic-entropy", "precision", "height", "discernibility",
    "dm-star", "aecs",
]  # fmt: skip
SearchName = Literal["optimal", "lightning", "lightning-top-down", "genetic"]
TDistance = Literal["auto", "equal", "ordered", "hierarchical"]


@app.command()
@friendly
def anonymize(
    source: Annotated[
        Path, typer.Argument(help="the table to publish (CSV or Parquet; with --db, a table's name)")
    ],
    qi: QiOption,
    output: Annotated[Path, typer.Option("-o", "--output", help="where to write the anonymised CSV")],
    k: Annotated[int, typer.Option("--k", help="every record hides among at least k")] = 5,
    l_div: Annotated[float | None, typer.Option("--l", help="l-diversity of --sensitive")] = None,
    t: Annotated[float | None, typer.Option("--t", help="t-closeness of --sensitive")] = None,
    sensitive: SensitiveOption = None,
    diversity: Annotated[
        str,
        typer.Option(help="distinct, entropy, grassberger (entropy, Grassberger's estimator) or recursive"),
    ] = "distinct",
    t_distance: Annotated[
        TDistance,
        typer.Option(
            help="t-closeness's distance: auto (ordered for numbers, else equal), equal, ordered (text in "
            "sorted order) or hierarchical (over --sensitive's hierarchy in --hierarchies)"
        ),
    ] = "auto",
    c: Annotated[float | None, typer.Option("--c", help="c of recursive (c, l)-diversity")] = None,
    algorithm: Annotated[
        Literal["mondrian", "lattice"] | None,
        typer.Option(
            help="Mondrian (the default), or lattice (full-domain; implied by --search and the options below)"
        ),
    ] = None,
    search: Annotated[
        SearchName | None,
        typer.Option(
            help="the full-domain search: optimal (up to 2,000,000 nodes), lightning, lightning-top-down "
            "or genetic (heuristic, within --time-limit); default: optimal, or lightning when the lattice is "
            "larger"
        ),
    ] = None,
    time_limit: Annotated[float, typer.Option(help="seconds a heuristic search may take")] = 10.0,
    max_evaluations: Annotated[
        int | None, typer.Option(help="stop a heuristic search after this many nodes (reproducible runs)")
    ] = None,
    search_seed: Annotated[int, typer.Option(help="seed of the genetic search (same seed, same node)")] = 0,
    weights: Annotated[
        str | None, typer.Option(help="weights of columns in the loss, e.g. age=2,sex=0.5 (others 1)")
    ] = None,
    local_recoding: Annotated[
        int,
        typer.Option(help="rounds re-anonymising the suppressed records on their own (ARX's local recoding)"),
    ] = 0,
    beta: BetaOption = None,
    enhanced_beta: EnhancedBetaOption = None,
    delta_disclosure: DeltaDisclosureOption = None,
    delta_presence: Annotated[
        str | None, typer.Option(help="δ-presence 'δmin,δmax' against --population (lattice)")
    ] = None,
    k_map: Annotated[
        int | None,
        typer.Option(help="k-map: against --population (lattice), or estimated from --sampling-fraction"),
    ] = None,
    k_map_estimator: KMapEstimatorOption = "poisson",
    significance: SignificanceOption = 0.01,
    average_risk: Annotated[
        float | None, typer.Option(help="threshold of the average re-identification risk (lattice)")
    ] = None,
    sample_uniqueness: Annotated[
        float | None, typer.Option(help="threshold of sample uniqueness (lattice)")
    ] = None,
    population_uniqueness: Annotated[
        float | None,
        typer.Option(help="threshold of estimated population uniqueness (lattice, --sampling-fraction)"),
    ] = None,
    estimator: EstimatorOption = "dankar",
    population: PopulationOption = None,
    sampling_fraction: SamplingFractionOption = None,
    microaggregate: Annotated[
        str | None,
        typer.Option(
            help="publish quasi-identifiers as their class's mean, median or mode: age=mean,education=mode"
        ),
    ] = None,
    hierarchies: HierarchiesOption = None,
    hierarchy_fallback: Annotated[
        bool, typer.Option(help="give values a hierarchy misses their own branch instead of failing")
    ] = False,
    fix_labels: FixLabelsOption = False,
    metric: Annotated[
        Metric | None,
        typer.Option(
            help="what the lattice search minimises: loss (ARX's information loss, the default), "
            "geometric-loss (ARX's Loss: geometric mean of the columns), entropy or monotonic-entropy "
            "(non-uniform entropy, with or without the suppressed records' term), precision (level ÷ "
            "height per cell, 1 suppressed), height (sum of the levels), discernibility (sum of squared "
            "class sizes, n per suppressed record), dm-star (no penalty) or aecs (records per class)"
        ),
    ] = None,
    gs_factor: Annotated[
        float,
        typer.Option(
            "--gs-factor", help="ARX's gs factor in 0..1: below 0.5 favours suppression, above generalisation"
        ),
    ] = 0.5,
    suppression_limit: Annotated[float, typer.Option(help="largest share of records suppressed")] = 0.05,
    keep: Annotated[
        str | None,
        typer.Option(
            "--keep",
            help="comma-separated columns written unchanged besides the quasi-identifiers and --sensitive; "
            "every other column is left out (an attribute nobody classified is taken as identifying)",
        ),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="read SOURCE as a table of this database: columns its metadata marks identifier, "
            "private_id or the privacy unit are never written",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="shuffle the rows reproducibly (tests; default: the CSPRNG)"),
    ] = None,
    report: Annotated[Path | None, typer.Option("--report", help="write the JSON report here")] = None,
    report_html: Annotated[Path | None, typer.Option(help="write the report as a page (.html)")] = None,
    report_png: Annotated[Path | None, typer.Option(help="write the class-size histogram (.png)")] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="utility report: a written column to predict, by a classifier trained on the release and "
            "tested on held-out rows (the release is then made from the other rows only)"
        ),
    ] = None,
    holdout: Annotated[float, typer.Option(help="with --target: the share of rows held out")] = 0.3,
) -> None:
    """Generalise and suppress until the table is k-anonymous (and l-diverse, t-close); write it, report.

    The file holds only the quasi-identifiers, the sensitive column and the --keep columns, its rows
    shuffled."""
    from privdb.anonymize import Models, Search
    from privdb.anonymize import anonymize as run
    from privdb.anonymize.criteria import evaluate
    from privdb.anonymize.model_spec import MONDRIAN_REFUSAL, needs_lattice
    from privdb.anonymize.release import publishable
    from privdb.anonymize.report import (
        histogram_png,
        read_table,
        release_report,
        render_html,
        render_png,
    )
    from privdb.anonymize.tables import staged_table

    columns = qi_columns(qi)
    kept = qi_columns(keep, "--keep") if keep is not None else []
    written = [*columns, *([sensitive] if sensitive else []), *kept]
    models = Models(
        beta=beta, enhanced_beta=enhanced_beta, delta_disclosure=delta_disclosure,
        delta_presence=_pair(delta_presence) if delta_presence is not None else None,
        k_map=k_map, k_map_estimator=k_map_estimator, significance=significance, average_risk=average_risk,
        sample_uniqueness=sample_uniqueness, population_uniqueness=population_uniqueness, estimator=estimator,
    )  # fmt: skip
    node_level = needs_lattice(models, population)
    full = search is not None or weights is not None or local_recoding > 0 or node_level
    if algorithm == "mondrian" and node_level:
        raise InvalidParameter(MONDRIAN_REFUSAL)
    algorithm = algorithm or ("lattice" if full else "mondrian")
    if algorithm != "lattice" and full:
        raise InvalidParameter(
            "--search, --weights and --local-recoding tune the full-domain search: "
            "leave out --algorithm mondrian"
        )
    if metric is not None and algorithm != "lattice":
        raise InvalidParameter("--metric chooses the lattice search's optimum: add --algorithm lattice")
    weight_map = {c: number(v, "--weights") for c, v in pairs(weights, "--weights").items()}
    aggregates = pairs(microaggregate, "--microaggregate")
    check_output(report, (".json",), "--report")
    check_output(report_html, (".html", ".htm"), "--report-html")
    check_output(report_png, (".png",), "--report-png")
    if db is None and output.resolve() == source.resolve():
        raise InvalidParameter("-o must name a new file: privdb never overwrites the input table")
    writable(output, "-o")
    check_target(target, written, holdout)
    with Steps(4) as steps:
        steps.next(f"reading {source.name}")
        whole, delimiter, unit = (*read_table(source), None) if db is None else database_table(
            db, str(source), written
        )  # fmt: skip
        people = read_table(population)[0] if population is not None else None
        check_written(whole, written, kept, columns, sensitive)
        split = None
        if target is not None:
            from privdb.publish.evaluation import split_rows  # only --target holds rows out

            split = split_rows(whole, holdout, unit=unit)
        frame = whole if split is None else split.train
        loaded = hierarchy_frames(hierarchies, [*columns, *([sensitive] if sensitive else [])], fix_labels)
        t_tree = _t_hierarchy(t_distance, t, sensitive, loaded)
        steps.next(f"anonymising {len(frame):,} records ({algorithm}, k = {k})")
        started = time.perf_counter()
        result = run(
            frame,
            columns,
            k=k,
            l=l_div,
            t=t,
            sensitive=sensitive,
            diversity=diversity,
            c=c,
            algorithm=algorithm,
            hierarchies={name: h for name, h in loaded.items() if name in columns} if loaded else None,
            hierarchy_fallback=hierarchy_fallback,
            suppression_limit=suppression_limit,
            metric=metric or "loss",
            gs_factor=gs_factor,
            t_distance=t_distance,
            t_hierarchy=t_tree,
            search=Search(search or "auto", time_limit, max_evaluations, search_seed),
            weights=weight_map or None,
            local_recoding=local_recoding,
            microaggregate=aggregates or None,
            models=models if models.any else None,
            population=people,
            sampling_fraction=sampling_fraction,
        )
        if result.params.get("note"):
            console().print(result.params["note"])
        seconds = time.perf_counter() - started
        parameters: dict[str, Any] = {
            "k": k, "l": l_div, "t": t, "sensitive": sensitive, "diversity": diversity, "c": c,
            "algorithm": algorithm, "qi": columns, "suppression_limit": suppression_limit,
            "hierarchies": str(hierarchies) if hierarchies else None,
        }  # fmt: skip
        parameters["written"] = [c for c in frame.columns if c in set(written)]
        if hierarchies:
            parameters["fix_labels"] = fix_labels
        if result.node is not None:
            parameters["metric"] = metric or "loss"
            parameters["gs_factor"] = gs_factor
            parameters["metric_value"] = result.params.get("metric_value")
            parameters["lattice_node"] = result.node
            parameters |= {key: result.params[key] for key in SEARCH_KEYS if key in result.params}
        if aggregates:
            parameters["microaggregate"] = aggregates
        if models.any:
            parameters["models"] = result.params["models"]
            parameters |= {key: result.params[key] for key in MODEL_KEYS if key in result.params}
        steps.next("measuring the release")
        coded = result.coded_table()  # the same values, as the codes the algorithm released
        # the release is written in a background thread while it is measured, and moved into place only
        # once the report holds (a refusal or Ctrl-C on the way leaves no file)
        shuffled = partial(publishable, coded, written, shuffler(seed))  # made in the writer's thread
        with staged_table(shuffled, output, delimiter) as commit:
            body = release_report(
                as_aggregated(frame, coded, aggregates),
                coded,
                columns,
                sensitive=sensitive,
                parameters=parameters,
                seconds=seconds,
                suppression={"records": result.n_suppressed, "reason": result.suppression_reason},
                hierarchies=loaded,
                search_loss=result.ncp_by_column or None,
                distance=t_distance,
            )
            if split is not None and target is not None:
                body["classifier"] = classifier(result, split, written, target, loaded)
            if models.any:
                found = evaluate(
                    result.table, columns, models, sensitive=sensitive, population=people,
                    sampling_fraction=sampling_fraction, hierarchies=result.hierarchies,
                )  # fmt: skip
                body["models"] = [r.to_dict() for r in found]
            steps.next(f"writing {output.name}")
            commit()
        if report is not None:
            report.write_text(json.dumps(body, indent=2, default=str) + "\n", encoding="utf-8")
        image = histogram_png(body) if report_html is not None or report_png is not None else None
        if report_html is not None:
            render_html(body, report_html, image)
        if report_png is not None:
            render_png(body, report_png, image)
    achieved, util, risk = body["achieved"], body["utility"], body["risk"]
    console().print(
        f"wrote {output} ({len(result.table):,} records): k = {achieved['k']}"
        + (f", l = {achieved['l']}" if achieved.get("l") is not None else "")
        + (f", t = {achieved['t']:.4g}" if achieved.get("t") is not None else "")
        + f"; NCP {util['ncp']:.2%}, {util['suppressed']:,} suppressed"
        + (f" ({result.suppression_reason})" if util["suppressed"] and result.suppression_reason else "")
        + f"; prosecutor risk max {risk['prosecutor_max']:.3g}, avg {risk['prosecutor_avg']:.3g}"
        + "".join(f"; {m['model']} {'holds' if m['holds'] else 'FAILS'}" for m in body.get("models", []))
        + f"; {seconds:.2f} s"
    )
    if split is not None:
        print_held_out(split, body["classifier"], "anonymised")


def _t_hierarchy(
    t_distance: str, t: float | None, sensitive: str | None, loaded: dict[str, Any] | None
) -> Any:
    """The sensitive column's hierarchy for ``--t-distance hierarchical`` (else None), or the refusal."""
    if t_distance != "auto" and t is None:
        raise InvalidParameter("--t-distance chooses t-closeness's distance: give --t as well")
    if t_distance != "hierarchical":
        return None
    if sensitive is None or not loaded or sensitive not in loaded:
        raise InvalidParameter(
            "--t-distance hierarchical needs --sensitive's hierarchy: put <sensitive>.csv (ARX layout) in "
            "the --hierarchies directory"
        )
    return loaded[sensitive]
