"""The model side: the chat client and its call policy (``client``), the gateway that
puts that policy in front of frameworks that call the model themselves (``gateway``),
the policy server (``policy_server``, with a transformers backend in
``transformers_backend``), the server launcher (``servers``) and constrained decoding
(``constrained``: a reply restricted to given texts, for transformers ``generate``)."""
