"""What the tests and the benchmark share, kept out of the shipped apps: a real OpenAI-compatible
fake server (`fake_openai`), an in-process fake LLM client (`fake_llm`), real Agora processes to
drive (`servers`) and a signed-in HTTP client (`http`)."""
