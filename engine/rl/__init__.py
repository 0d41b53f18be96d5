"""The reinforcement-learning interface: the Gymnasium environment, the multi-discrete action vector, the observation
features, and the trace recorder and reader."""
