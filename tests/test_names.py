"""Test names: valid, unique, deterministic identifiers from any marker name."""

from __future__ import annotations

import keyword

import pytest

from ntdd.format.names import NameRegistry, identifier_from_title, positional_name


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("input shape", "test_input_shape"),
        ("Input Shape", "test_input_shape"),
        ("  shape: (N, 128) -> logits!  ", "test_shape_n_128_logits"),
        ("größe prüfen", "test_größe_prüfen"),
        ("Ωmega", "test_ωmega"),
        ("ﬁne ligature", "test_fine_ligature"),  # NFKC, as Python reads identifiers
        ("2 layers", "test_2_layers"),
        ("class", "test_class"),
        ("None", "test_none"),
        ("test the loss", "test_the_loss"),
        ("../../etc/passwd", "test_etc_passwd"),
        ("a/b\\c", "test_a_b_c"),
        ("tab\tand\nnewline", "test_tab_and_newline"),
    ],
)
def test_titles_become_identifiers(title: str, name: str) -> None:
    assert identifier_from_title(title) == name
    assert name.isidentifier() and not keyword.iskeyword(name)


@pytest.mark.parametrize("title", ["", "   ", "🔥🔥", "!!!", "@#$", "—"])
def test_titles_with_no_identifier_characters_give_nothing(title: str) -> None:
    assert identifier_from_title(title) == ""


def test_unnamed_cells_are_named_from_their_position() -> None:
    assert positional_name(7) == "test_cell_7"


def test_collisions_get_a_numbered_suffix_in_order() -> None:
    registry = NameRegistry(reserved={"pytest"})
    assert [registry.claim(n) for n in ["test_a", "test_a", "test_b", "test_a", "test_a_2"]] == [
        "test_a",
        "test_a_2",
        "test_b",
        "test_a_3",
        "test_a_2_2",
    ]
