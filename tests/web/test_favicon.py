"""The browser's first request for an icon, /favicon.ico, is answered with Agora's icon rather than a 404
(every first visit logged one), to anyone, signed in or not, and every page names the icon."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_favicon_answers_everyone_with_an_image():
    response = Client().get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(response.streaming_content if response.streaming else [response.content])
    assert "max-age" in response["Cache-Control"], "asked once, not on every page"


def test_pages_name_the_icon():
    html = Client().get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'rel="icon"' in html
