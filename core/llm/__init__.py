"""The LLM: one protocol, one OpenAI-compatible client, and the budget around it.

Public API:

    from core.llm.client import LLM, LLMError, OpenAICompatibleLLM
    from core.llm.budget import BudgetedLLM, llm_check

Nothing here is imported on a check without an LLM configured beyond the protocol (the openai client
loads on first use).
"""
