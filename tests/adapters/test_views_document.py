"""The OpenAPI document's `ViewsDocument` is the views `GET /v1/views` answers:
every view of `projections.VIEW_NAMES` and the position, nothing else. (It once
lacked `runtimes` and `investigations`, and, accepting unknown keys, nothing
noticed.)"""

from __future__ import annotations

import msgspec

from tandem.adapters.api_schema import ViewsDocument
from tandem.projections import VIEW_NAMES, Views


def test_the_views_document_names_every_view_and_the_position() -> None:
    assert ViewsDocument.__struct_fields__ == ("position", *VIEW_NAMES)


def test_the_views_document_decodes_the_views_of_an_empty_engine_and_refuses_an_unknown_key() -> None:
    document = {"position": 0, **Views().document()}
    decoded = msgspec.convert(document, ViewsDocument)
    assert decoded.runtimes == [] and decoded.investigations == []
    schema = msgspec.json.schema(ViewsDocument)
    definition = schema["$defs"]["ViewsDocument"]
    assert definition["additionalProperties"] is False
    assert set(definition["required"]) == {"position", *VIEW_NAMES}
    try:
        msgspec.convert({**document, "surprise": []}, ViewsDocument)
    except msgspec.ValidationError as error:
        assert "surprise" in str(error)
    else:
        raise AssertionError("an unknown key was accepted")
