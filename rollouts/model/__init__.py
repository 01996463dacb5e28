"""The model side: the chat client and its call policy (``client``), the gateway that
puts that policy in front of frameworks that call the model themselves (``gateway``),
the policy server (``policy_server``, with a transformers backend in
``transformers_backend``) and the server launcher (``servers``)."""
