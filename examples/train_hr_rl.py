"""The ResonanceOS spec's training script: PPO in the HRV writing environment for 5000 timesteps."""

from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, train_hr_ppo

# Initialize HRV writing environment
env = HRWritingEnv(hrv_dim=8)
print(f"HRV Dimensions: {env.hrv_dim}")
print(f"Observation Space: {env.observation_space}")
print(f"Action Space: {env.action_space}")
print(f"Max Episode Steps: {env.max_episode_steps}")

# Train PPO model for human resonance optimization
model = train_hr_ppo(env, timesteps=5000)

# Training completion confirmation
print("HR-PPO model trained successfully")
