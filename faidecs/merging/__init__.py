"""How a program splits into merger roles (the root merger of a type, the conjunction merger of a
type sequence) and which events each consumer of a merger needs (propagated unary filters).
Shared by the overlay and the Spark plan, so it lives below both."""
