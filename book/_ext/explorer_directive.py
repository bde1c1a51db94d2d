"""The `{weight-explorer}` directive of the book (loaded by volratio_book.py): an interactive weight
explorer (`static/weight_explorer.js`) for any network `volratio.data.specs.load_network` knows,
computed when the page is read:

    ```{weight-explorer} picbreeder:skull
    :compare: fer-sgd:skull
    ```

The page gets the network(s) exported by `volratio.report.explorer`, their weights ranked by how much they
move the image, and a static sweep figure per network that stays for readers without JavaScript.
When the page is written, the sweep figures and the reference renders of `CoordMLP.render` that
the browser check (.ci/browser_check.mjs) compares the canvas against go to
`_static/weight-explorer/<page>-<n>[-i].{png,json}`. Used in book/emc2.md and book/picbreeder.md.
"""

import base64
import html
import io
import json
from pathlib import Path
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective
from sphinx.util.osutil import relative_uri

STATIC = Path(__file__).resolve().parent / "static"


class weight_explorer(nodes.General, nodes.Element):
    """Holds `key`, `html` (the widget), and what is written next to the static files when the page
    is written: `check` (the reference renders) and `pngs` (the static sweep figures, base64)."""


def _figure_png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _script_json(data) -> str:
    """JSON safe inside <script>: no `</` can close the element early."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/")


class WeightExplorer(SphinxDirective):
    """`{weight-explorer} SPEC` with options `:compare: SPEC`, `:res:`, `:top:`, `:seed:`."""

    required_arguments = 1
    option_spec: ClassVar[dict] = {
        "compare": directives.unchanged_required,  # a second network, shown beside the first
        "res": directives.positive_int,  # canvas resolution (default 64)
        "top": directives.positive_int,  # ranked weights listed (default 24)
        "seed": directives.nonnegative_int,  # first random direction (default 1)
    }

    def run(self):
        import matplotlib

        matplotlib.use("Agg")  # the build draws the static figures off-screen
        from volratio.errors import VolratioError
        from volratio.report import explorer

        cfg = explorer.ExplorerConfig()
        for opt in ("res", "top", "seed"):
            if opt in self.options:
                setattr(cfg, opt, self.options[opt])
        specs = [self.arguments[0]] + ([self.options["compare"].strip()] if "compare" in self.options else [])
        try:
            made = [explorer.widget_data(spec, cfg) for spec in specs]
        except VolratioError as e:
            raise self.error(f"weight-explorer: {e}") from None
        from volratio import emc2, nets
        from volratio.data import specs as specs_module

        # re-read the page when the library code it ran changes
        for mod in (explorer, emc2, nets, specs_module):
            self.env.note_dependency(mod.__file__)
        key = f"{self.env.docname.replace('/', '-')}-{self.env.new_serialno('weight-explorer')}"
        pngs = [_figure_png(fig) for _, _, fig in made]
        figures = "".join(
            f'<figure class="vx-static" style="flex:1 1 300px;margin:0">'
            f'<img src="@STATIC@/{key}-{i}.png" style="max-width:100%" '
            f'alt="weight sweep of {html.escape(page["spec"])}"/>'
            f"<figcaption>{html.escape(page['spec'])}: rows — the {cfg.sweep_rows} weights whose change by "
            f"±1 moves the image most, then all weights along random direction {cfg.seed}; columns — "
            f"Δw = {', '.join(f'{o:+g}' for o in cfg.sweep_offsets)}.</figcaption></figure>"
            for i, (page, _, _) in enumerate(made)
        )
        data = {"networks": [page for page, _, _ in made]}
        widget = (
            f'<div class="volratio-explorer" id="vx-{key}" data-check="@STATIC@/{key}.json">'
            f'<script type="application/json" class="vx-data">{_script_json(data)}</script>'
            '<div class="vx-live" hidden></div>'
            '<div class="vx-static-row" style="display:flex;flex-wrap:wrap;gap:12px">' + figures + "</div></div>"
        )
        check = {
            "key": key,
            "networks": [dict(ref, spec=page["spec"]) for page, ref, _ in made],
        }
        return [weight_explorer(key=key, html=widget, check=check, pngs=pngs)]


def _visit_weight_explorer_html(self, node):
    """Write the reference renders and the sweep figures to `_static/weight-explorer/`; put the
    widget in the page."""
    folder = Path(self.builder.outdir) / "_static" / "weight-explorer"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{node['key']}.json").write_text(json.dumps(node["check"], separators=(",", ":")))
    for i, png in enumerate(node["pngs"]):
        (folder / f"{node['key']}-{i}.png").write_bytes(base64.b64decode(png))
    uri = relative_uri(
        self.builder.get_target_uri(self.builder.current_docname),
        "_static/weight-explorer",
    )
    self.body.append(node["html"].replace("@STATIC@", html.escape(uri)))
    raise nodes.SkipNode


def _skip(self, node):
    raise nodes.SkipNode


def _static_path(app, config):
    config.html_static_path = list(config.html_static_path or []) + [str(STATIC)]


def _explorer_script(app, pagename, templatename, context, doctree):
    if doctree is not None and doctree.next_node(weight_explorer) is not None:
        app.add_js_file("weight_explorer.js", loading_method="defer")


def setup(app):
    app.connect("config-inited", _static_path, priority=900)
    app.add_node(
        weight_explorer,
        html=(_visit_weight_explorer_html, None),
        **{b: (_skip, None) for b in ("latex", "text", "man", "texinfo")},
    )
    app.add_directive("weight-explorer", WeightExplorer)
    app.connect("html-page-context", _explorer_script)
