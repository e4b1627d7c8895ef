"""One self-play episode: propose, solve, critique; task buffers; rollouts; LIMO seeding."""
