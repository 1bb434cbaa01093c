"""ntdd beside other plugins: nbval's cells (`nbval`), pytest-asyncio (`asyncio`), and
VS Code's test adapter (`vscode`)."""
