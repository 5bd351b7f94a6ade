"""The policy and the fences: what a lab's files may call and link
(policy.toml's categories, checked on the source and on what the build
made), and the fenced student regions (fences, their lexer and rules)."""
