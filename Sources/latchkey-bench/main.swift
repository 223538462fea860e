print("latchkey-bench: under construction")
