"""The API's OpenAPI schema is valid OpenAPI and describes every operation; the docs page loads
Swagger from this server, not a CDN."""

from __future__ import annotations

from openapi_spec_validator import validate


def test_the_openapi_schema_validates(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert set(schema["paths"]) == {
        "/api/v1/debates",
        "/api/v1/debates/{pk}",
        "/api/v1/debates/{pk}/stop",
        "/api/v1/debates/{pk}/resume",
        "/api/v1/debates/{pk}/export.md",
        "/api/v1/debates/{pk}/export.json",
        "/api/v1/debates/{pk}/stream",
    }
    stream = schema["paths"]["/api/v1/debates/{pk}/stream"]["get"]["responses"]["200"]
    assert "text/event-stream" in stream["content"]
    assert schema["components"]["securitySchemes"]["BearerToken"]["scheme"] == "bearer"
    start = schema["paths"]["/api/v1/debates"]["post"]["responses"]
    assert {"201", "422", "429"} <= set(start)


def test_the_docs_page_uses_local_files(client, db):
    page = client.get("/api/v1/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower()
