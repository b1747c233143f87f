"""A debate as a model: Agora behind OpenAI's chat completions API at `/openai/v1/`, so a chat
client (Open WebUI, LobeChat, Cherry Studio, a script on the `openai` SDK) starts and follows a
debate as it would talk to a model. A thin door: a request becomes the JSON API's start body
(`debates.api.starting`), the debate runs as every debate does, and the reply follows it with the
event stream's reader (`debates.api.stream.follow`). docs/openai-door.md."""
