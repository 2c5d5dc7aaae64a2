"""kgnorm.training"""
