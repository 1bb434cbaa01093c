"""ntdd beside other plugins: nbval's cells (`nbval`) and VS Code's test adapter
(`vscode`). (pytest-asyncio's coroutine tests are collection's: `collection.async_tests`.)"""
