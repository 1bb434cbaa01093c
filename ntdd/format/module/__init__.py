"""The text of a generated module: written and read here, both directions side by side.

A module ntdd writes for a notebook is

    # ntdd: generated — edit the notebook or use `ntdd sync`.      the header:
    # ntdd-source: nb.ipynb                                        where it came from,
    # ntdd-version: 0.1.0                                          which ntdd wrote it,
    # ntdd-hash: sha256:…                                          the notebook's test content,
    # ntdd-render: …                                               the format and templates,
    # ntdd-frame: …                                                the text outside test regions
    …
    # %% ntdd fixtures
    # %% ntdd setup: cell 1, id 2d3a2959                           one region per code cell,
    # %% ntdd test: cell 4, id 9ba5a08a, sha 1c2d…                 in notebook order,
    # %% ntdd end: after cell 9                                    and the cells below the last test

A test region is a cell of `def test_*` kept as written (its marks applied
after it), or one function wrapping the cell: the cell's marks as
decorators, `def test_x():`, a `global` line when the cell assigns names,
and the cell's lines; or a function that runs the cell as notebook code.
The Jinja templates lay the module out; the pieces whose text `sync`,
`export --check` and the runtime read back are made and read in this
package, each piece's writer beside its reader:

- `header`: the header's fields, and the fingerprint of the format (`FORMAT`)
  and the templates;
- `regions`: the region markers, and finding them again in a module;
- `stamps`: the hashes that tell an edited region or frame;
- `bodies`: a test cell's marks and function, and `read_region`, which
  reads an edited region back into its cell.

Other code imports from `ntdd.format.module` itself.
"""

from __future__ import annotations

from ntdd.format.module.bodies import (
    CELL_CODE_NOTE,
    EMPTY_BODY,
    GLOBAL_NOTE,
    MARKS_COMMENT,
    NEEDS_CUDA,
    USES_DEVICE,
    CellEdit,
    cell_code_note,
    mark_expression,
    mark_of_expression,
    marks_tail,
    read_region,
    wrapped_body,
)
from ntdd.format.module.header import (
    FORMAT,
    FRAME_FIELD,
    HEADER_FIRST_LINE,
    MARKERS_FIELD,
    VERSION_FIELD,
    Header,
    header_text,
    is_generated,
    parse_header,
    render_fingerprint,
    without_version,
)
from ntdd.format.module.regions import (
    MARKER_START,
    Region,
    conflict_marker_line,
    end_marker,
    marker,
    marker_id,
    markers_in_doubt,
    parameters_call,
    parameters_marker,
    parse_regions,
    region_sha,
    regions_of_lines,
    test_definitions,
)
from ntdd.format.module.stamps import finish, frame_intact, frame_sha, intact, stamp_hashes

__all__ = [
    "CELL_CODE_NOTE",
    "EMPTY_BODY",
    "FORMAT",
    "FRAME_FIELD",
    "GLOBAL_NOTE",
    "HEADER_FIRST_LINE",
    "MARKERS_FIELD",
    "MARKER_START",
    "MARKS_COMMENT",
    "NEEDS_CUDA",
    "USES_DEVICE",
    "VERSION_FIELD",
    "CellEdit",
    "Header",
    "Region",
    "cell_code_note",
    "conflict_marker_line",
    "end_marker",
    "finish",
    "frame_intact",
    "frame_sha",
    "header_text",
    "intact",
    "is_generated",
    "mark_expression",
    "mark_of_expression",
    "marker",
    "marker_id",
    "markers_in_doubt",
    "marks_tail",
    "parameters_call",
    "parameters_marker",
    "parse_header",
    "parse_regions",
    "read_region",
    "region_sha",
    "regions_of_lines",
    "render_fingerprint",
    "stamp_hashes",
    "test_definitions",
    "without_version",
    "wrapped_body",
]
