"""Collecting notebooks: a notebook as the module `ntdd export` would write (`collect`), its
compiled module cached (`module_cache`), the session's collection hooks and test order
(`hooks`), a notebook's `async def` tests kept ntdd's under pytest-asyncio
(`async_tests`), and the notebooks without tests (`untested`)."""
