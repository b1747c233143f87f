"""Every `aria-labelledby` on a debate's page names an element that is there: while a debate ran, the
report's section pointed at its heading before the report (and the heading) existed, which axe-core
reports as `aria-prohibited-attr` (serious), in both languages."""

from __future__ import annotations

import re

import pytest

from tests.web.test_audience import make_duel, viewer

LABELLED_BY = re.compile(r'aria-labelledby="([^"]+)"')


def dangling(html: str) -> list[str]:
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    return [name for names in LABELLED_BY.findall(html) for name in names.split() if name not in ids]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_debate_without_its_report_labels_nothing_by_a_missing_heading(libraries, alice, language):
    debate = make_duel(alice)
    client = viewer(alice)
    html = client.get(f"/debates/{debate.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert 'id="debate-report"' in html
    assert LABELLED_BY.search(html), "the page labels its sections"
    assert dangling(html) == []
