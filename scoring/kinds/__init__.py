"""One module per scorer family: its prompts, reply and analysis models, options,
formula and registry entry. ``scoring.registry`` lists the modules and assembles the
shared tables from them; ``scoring.kinds.base`` holds what they all build on."""
