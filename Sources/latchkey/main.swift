print("latchkey: under construction")
